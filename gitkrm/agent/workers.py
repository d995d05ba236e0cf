"""The long-lived side of a term: one worker per source, its ticks, and what steers it.

`run` (not `run --once`) starts them: each source's `SourceWorker` syncs when its interval
ticks (`Scheduler`), when its repository changes or its GitSource is edited or asked for a
sync (`steering`); a child of a source tree syncs in its turn (`tree.order`), and the
deletion of a declaring object is heard at once (`tree.watch`). The term
(`gitkrm.agent.term`) owns the runners; the workers only run them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from gitkrm.cache import WatchCache
from gitkrm.krm import GVK, Obj, ResourceKey
from gitkrm.store import Store
from gitkrm.store.protocol import meta

from . import crd
from .runner import SourceRunner
from .scheduler import Reconcile, Scheduler, SourceWorker, Trigger
from .shutdown import wait_or_force

if TYPE_CHECKING:
    from .agent import AgentOptions
    from .config import SourceConfig
    from .term import Term
    from .tree.watch import DeclaringWatch

log = logging.getLogger("gitkrm.agent")


class Workers:
    """See the module docstring. Made by `Term.start_workers`; `cancel` stops the ticks and
    watches, `stop` (graceful) or `close` (at once) the workers."""

    def __init__(
        self, term: Term, *, store: Store, cache: WatchCache, options: AgentOptions
    ) -> None:
        self._term = term
        self._store = store
        self._cache = cache
        self._options = options
        self._workers: dict[str, SourceWorker] = {}
        self._scheduler = Scheduler()
        self._tasks: list[asyncio.Task[None]] = []
        self._replaced: dict[str, asyncio.Event] = {}
        """Per source: set when a spec edit replaced its source (the change watch restarts)."""
        self._pending_spec: dict[str, Obj] = {}
        """Per source: the edited GitSource its next sync takes its spec from."""
        self._pending_child: dict[str, tuple[SourceConfig, int]] = {}
        """Per child: the spec its next sync takes (its declaring object changed)."""
        self._declaring: DeclaringWatch | None = None
        self._retries: dict[str, asyncio.TimerHandle] = {}
        """Per source: the sync its failed one asked for after `retry_interval`."""

    async def start(self) -> None:
        """One worker per source (a first sync asked for), the ticks, the watches."""
        from . import steering

        term = self._term
        for name, runner in term.runners.items():
            self.add(name, runner)
        if term.gitsources:
            listed = await self._store.list(crd.GITSOURCE_GVK, crd.NAMESPACE)
            rv = listed["metadata"]["resourceVersion"]
            watch = steering.watch_gitsources(
                self._store, rv, on_gitsource=self._on_gitsource, stopping=lambda: term.stopping
            )
            self._spawn(watch, "gitkrm-gitsources")
        self._scheduler.start()
        log.info(
            "agent %s running %d source(s): %s",
            self._options.agent_name,
            len(term.runners),
            ", ".join(f"{r.name}={r.config.safe_url}" for r in term.runners.values()),
        )

    def add(self, name: str, runner: SourceRunner) -> None:
        """A source's worker (a first sync asked for), its ticks and its change watch."""
        from . import steering

        worker = SourceWorker(name, self._reconciler(name))
        self._workers[name] = worker
        replaced = self._replaced[name] = asyncio.Event()
        self._scheduler.add(worker, interval=runner.config.interval)
        worker.start()
        worker.request(Trigger.START)
        if self._options.watch_changes:
            term = self._term
            watch = steering.watch_changes(
                runner, worker, replaced=replaced, stopping=lambda: term.stopping
            )
            self._spawn(watch, f"gitkrm-changes-{name}")

    def request(self, name: str, trigger: Trigger) -> None:
        """Ask the source's worker for a sync (none: nothing happens)."""
        worker = self._workers.get(name)
        if worker is not None:
            worker.request(trigger)

    def reconfigure_later(self, name: str, config: SourceConfig, generation: int) -> bool:
        """A child's new spec, taken at the start of its next sync (never under a sync that
        runs now), which is asked for. False: the child has no worker."""
        worker = self._workers.get(name)
        if worker is None:
            return False
        self._pending_child[name] = (config, generation)
        worker.request(Trigger.SPEC)
        return True

    async def remove(self, name: str) -> None:
        """Stop and forget a source's worker and ticks (a child removed)."""
        self._cancel_retry(name)
        worker = self._workers.pop(name, None)
        if worker is not None:
            self._scheduler.remove(name)
            if asyncio.current_task() is not getattr(worker, "_task", None):
                await worker.stop(grace=0)
        self._replaced.pop(name, None)
        self._pending_child.pop(name, None)

    def _on_gitsource(self, obj: Obj) -> None:
        from . import steering

        name = meta(obj).get("name", "")
        runner = self._term.runners.get(name)
        worker = self._workers.get(name)
        if runner is None or worker is None:
            return
        pending = steering.on_gitsource(runner, worker, obj)
        if pending is not None and self._term.tree.by_name(name) is None:
            # A child's spec is its declaring object's: an edit of its GitSource is not used.
            self._pending_spec[name] = pending

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        self._tasks = [t for t in self._tasks if not t.done()]
        self._tasks.append(asyncio.create_task(coro, name=name))

    def _reconciler(self, name: str) -> Reconcile:
        async def reconcile(triggers: frozenset[Trigger]) -> None:
            term = self._term
            runner = term.runners.get(name)
            if runner is None:
                return  # a child stopped meanwhile
            if term.tree.by_name(name) is not None:
                from .tree import order

                await self._reconfigure_pending(name, runner)
                await order.sync_child(term.tree, name, triggers)
                await term.tree.statuses.flush()
                self._follow_declaring()
                self._retry_later(name, runner)
                return
            pending = self._pending_spec.pop(name, None)
            if pending is not None:
                from . import steering

                await steering.apply_spec(
                    runner,
                    pending,
                    scheduler=self._scheduler,
                    replaced=self._replaced[name],
                )
            await runner.reconcile(triggers)
            await term.tree.after_pass(runner)
            self._follow_declaring()
            self._retry_later(name, runner)

        return reconcile

    def _retry_later(self, name: str, runner: SourceRunner) -> None:
        """After a failed sync, one more when the source's `retry_interval` has passed,
        when that comes before its next tick (Flux's `retryInterval`)."""
        self._cancel_retry(name)
        retry, worker = runner.config.retry_interval, self._workers.get(name)
        if runner.last_ok or retry is None or retry >= runner.config.interval or worker is None:
            return
        loop = asyncio.get_running_loop()
        self._retries[name] = loop.call_later(retry, worker.request, Trigger.RETRY)

    def _cancel_retry(self, name: str) -> None:
        handle = self._retries.pop(name, None)
        if handle is not None:
            handle.cancel()

    async def _reconfigure_pending(self, name: str, runner: SourceRunner) -> None:
        """A child's new spec, in its worker before the sync it asked for."""
        pending = self._pending_child.pop(name, None)
        if pending is None:
            return
        config, generation = pending
        interval = runner.config.interval
        source = runner.source
        await runner.reconfigure(config, generation=generation)
        if config.interval != interval:
            self._scheduler.reschedule(name, interval=config.interval)
        replaced = self._replaced.get(name)
        if replaced is not None and runner.source is not source:
            replaced.set()

    def _follow_declaring(self) -> None:
        """Hear of the deletion of any declaring object at once."""
        tree = self._term.tree
        if not tree.children:
            return
        if self._declaring is None:
            from .tree.watch import DeclaringWatch

            self._declaring = DeclaringWatch(
                self._cache, self._declaring_deleted, on_read=self._read_changed
            )
        self._declaring.follow(GVK.of(c.obj) for c in tree.children.values() if c.obj)
        self._declaring.follow_reads(tree.read_kinds())

    def _read_changed(self, key: ResourceKey, resource_version: str | None) -> None:
        """An object children were read from changed (an AppProject): their parents'
        passes re-read them."""
        for parent in self._term.tree.readers(key, resource_version):
            self.request(parent, Trigger.CHANGE)

    def _declaring_deleted(self, key: ResourceKey) -> None:
        child = self._term.tree.children.get(key)
        if child is not None:
            self.request(child.parent, Trigger.CHANGE)  # its pass removes the child

    async def cancel(self) -> None:
        """No more ticks, watches or steering (the syncs under way go on)."""
        self._scheduler.shutdown()
        declaring, self._declaring = self._declaring, None
        if declaring is not None:
            await declaring.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def stop(self, *, forced: asyncio.Event, grace: float) -> None:
        """Graceful: the syncs under way finish (up to `grace`, or until `forced` is set:
        then they are cancelled)."""
        stops = [w.stop(grace=grace) for w in self._workers.values()]
        stopping: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(*stops))

        def cancel_all() -> None:
            for w in self._workers.values():
                w.cancel()

        await wait_or_force(stopping, forced=forced, grace=grace + 1, on_force=cancel_all)

    async def close(self) -> None:
        """Every worker cancelled at once, and awaited; nothing is left pending."""
        for name in list(self._retries):
            self._cancel_retry(name)
        for worker in self._workers.values():
            await worker.stop(grace=0)
        self._workers.clear()
        self._replaced.clear()
        self._pending_spec.clear()
        self._pending_child.clear()
