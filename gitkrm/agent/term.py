"""A term: the span during which the agent writes to its target, and everything it owns.

A term keeps the GitSource objects, one `SourceRunner` per source, the reports into Git
(`reporting`) and, while the agent runs long-lived, one worker per source with its ticks and
the watches that steer it (`workers`). It is the host of the source tree below its sources
(`tree.children`). The embedded target runs one term for the agent's whole life; the cluster
target one per leadership (`gitkrm.agent.cluster`). A term is begun and ended by the agent
(`Agent.begin`, `Agent.end`), its one owner; targets drive what it does in between.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from gitkrm.cache import WatchCache
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store import Store
from gitkrm.store.protocol import meta

from . import gitsources, lastsync
from .crd import REQUESTED_AT
from .reporting import Reporting
from .runner import SourceRunner
from .runner_reports import wait_healthy
from .scheduler import Trigger
from .shutdown import Shutdown
from .state import git_cache
from .status import Outcome

if TYPE_CHECKING:
    from gitkrm.health import WaitResult
    from gitkrm.report import HealthFollower, PushState, Reporter
    from gitkrm.sync.hooks import Phase as HookPhase

    from .agent import AgentOptions
    from .config import SourceConfig
    from .tree.children import Tree
    from .workers import Workers

log = logging.getLogger("gitkrm.agent")

Observe = Callable[[str, str, float], None]
"""(source, result, seconds) of a sync: into the metrics the target serves."""


class Term:
    """See the module docstring. `open` makes the GitSource objects and runners; `end`
    releases everything. A term is not begun twice."""

    def __init__(
        self,
        *,
        store: Store,
        cache: WatchCache,
        options: AgentOptions,
        gitsources: bool,
        observe: Observe,
        before_wait: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """`before_wait`: called before a sync first waits on health (a wave, a hook):
        the embedded target starts its controllers, which `run --once` does not run."""
        self._store = store
        self._before_wait = before_wait
        self._cache = cache
        self._options = options
        self._observe = observe
        self.gitsources = gitsources
        """Whether the target serves the GitSource kind (a cluster may lack the CRD)."""
        self.runners: dict[str, SourceRunner] = {}
        self._live: Workers | None = None
        """The workers of a long-lived agent (`start_workers`)."""
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._reports = Reporting(
            store=store, cache=cache, options=options, on_push_state=self._on_push_state
        )
        self._tree: Tree | None = None
        self._crds_done: set[str] = set()

    @property
    def tree(self) -> Tree:
        """The children of the term's sources (`gitkrm.agent.tree.children`)."""
        if self._tree is None:
            from .tree.children import Tree

            self._tree = Tree(self, store=self._store, agent_name=self._options.agent_name)
        return self._tree

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def reporter(self) -> Reporter | None:
        return self._reports.reporter

    @property
    def follower(self) -> HealthFollower | None:
        return self._reports.follower

    # -- begin -------------------------------------------------------------------------

    async def open(self) -> None:
        """The GitSource objects (unconfigured ones removed) and one runner per source."""
        options, store = self._options, self._store
        if self.gitsources:
            wanted = {c.name for c in options.sources}
            await gitsources.forget_unconfigured(
                store, agent_name=options.agent_name, wanted=wanted
            )
        for config in options.sources:
            live: Obj = {}
            if self.gitsources:
                live = await gitsources.ensure(store, config, agent_name=options.agent_name)
            await self._peer_crds(config)
            self._make_runner(config, live)
        if not options.skip_unchanged:
            self.start_reports()

    async def _peer_crds(self, config: SourceConfig) -> None:
        """The CRDs and namespaces of the peers the source interprets, when the target
        lacks them."""
        if not config.interpret:
            return
        from .tree import crds, peerns

        await crds.ensure(self._store, config.interpret, done=self._crds_done)
        await peerns.ensure(self._store, config.interpret, done=self._crds_done)

    def _make_runner(self, config: SourceConfig, live: Obj, *, parent: str = "") -> SourceRunner:
        """A source's runner, registered with the term (and its reports, when they run)."""
        options, store = self._options, self._store
        runner = SourceRunner(
            store=store,
            config=config,
            agent_name=options.agent_name,
            apply_mode=options.apply_mode,
            git_cache=git_cache(options.state_dir, config.name),
            live=live,
            state_dir=options.state_dir,
            skip_unchanged=options.skip_unchanged,
            cache=self._cache,
            track_drift=options.track_drift,
            deadline=options.wait_deadline,
        )
        if options.skip_unchanged:
            runner.before_pass = self.start_reports  # nothing to do: nothing reported
        if not self.gitsources:
            desired = config.to_object(agent_name=options.agent_name)
            runner.writer = gitsources.NoStatusWriter(store, desired=desired)
        runner.observe = self._observe
        runner.before_wait = functools.partial(self._waits, config.name)
        runner.parent = parent
        self.runners[config.name] = runner
        # A request made while no agent ran is handled by the first sync.
        asked = (meta(live).get("annotations") or {}).get(REQUESTED_AT)
        handled = (live.get("status") or {}).get("lastHandledRequestedAt")
        runner.requested_at = asked or handled
        self._reports.attach(config.name, runner)
        return runner

    def start_reports(self) -> None:
        """The reporter and the health follower of the term, every runner's source
        registered: made as the term begins, or (`skip_unchanged`) before the first pass
        that syncs, so that a run with nothing to do does not load them at all."""
        self._reports.start(self.runners)

    def _on_push_state(self, name: str, state: PushState) -> None:
        """The reporter's push state changed: into the GitSource status (in the background)."""
        runner = self.runners.get(name)
        if runner is None or self._stopping:
            return
        self._spawn(runner.set_report_state(state.to_status()), f"gitkrm-report-{name}")

    # -- one pass ----------------------------------------------------------------------

    async def sync_all(self, shutdown: Shutdown | None, outcomes: list[Outcome]) -> list[Outcome]:
        """Sync every source that is not suspended, one after the other, then the whole
        tree below them (children, grandchildren, in `dependsOn` order), into `outcomes`
        (kept when the pass is cancelled)."""

        def stopped() -> bool:
            return shutdown is not None and shutdown.requested.is_set()

        for runner in list(self.runners.values()):
            if stopped():
                break
            if runner.config.suspend:
                log.info("source %s is suspended: not synced", runner.name)
                continue
            outcome = await runner.reconcile(frozenset({Trigger.START}))
            if outcome is not None:
                outcomes.append(outcome)
            await self.tree.after_pass(runner)
        from .tree import order

        await order.sync_children(self.tree, stopped=stopped, outcomes=outcomes)
        return outcomes

    def problems(self) -> list[str]:
        """Declaring objects that could not be made children (invalid, a cycle)."""
        return [] if self._tree is None else self._tree.problems()

    def waiting(self) -> list[str]:
        """Children left waiting for their dependencies (never synced in this term)."""
        if self._tree is None:
            return []
        return [c.name for c in self._tree.runnable() if c.waiting_for]

    # -- the tree's host (gitkrm.agent.tree.child.Host) ---------------------------------

    def runner(self, name: str) -> SourceRunner | None:
        return self.runners.get(name)

    async def start_child(
        self, config: SourceConfig, *, parent: str, declared_by: ObjectRef
    ) -> SourceRunner:
        live: Obj = {}
        if self.gitsources:
            from .tree.naming import ref_text

            live = await gitsources.ensure(
                self._store,
                config,
                agent_name=self._options.agent_name,
                parent=parent,
                declared_by=ref_text(declared_by),
            )
        await self._peer_crds(config)
        runner = self._make_runner(config, live, parent=parent)
        if self._live is not None:
            self._live.add(config.name, runner)
        return runner

    async def reconfigure_child(self, name: str, config: SourceConfig) -> None:
        runner = self.runners[name]
        generation = runner.generation
        if self.gitsources:
            parent = self.tree.parent_of(name)
            live = await gitsources.ensure(
                self._store, config, agent_name=self._options.agent_name, parent=parent
            )  # the declaring object is the same: its annotation stays
            generation = int(meta(live).get("generation") or generation)
        if self._live is None or not self._live.reconfigure_later(name, config, generation):
            await runner.reconfigure(config, generation=generation)  # run --once: no sync runs

    async def stop_child(self, name: str) -> None:
        if self._live is not None:
            await self._live.remove(name)
        runner = self.runners.pop(name, None)
        if runner is not None:
            await runner.close()
        self._reports.forget(name)
        if self.gitsources:
            await gitsources.remove(self._store, name)

    async def remembered(self, parent: str) -> dict[str, ObjectRef]:
        if not self.gitsources:
            return {}
        return await gitsources.children_of(
            self._store, agent_name=self._options.agent_name, parent=parent
        )

    async def last_revision(self, name: str) -> str | None:
        runner = self.runners.get(name)
        if runner is not None:
            found = runner.synced_revision or runner.status.get("lastSyncedRevision")
            return str(found) if found else None
        if not self.gitsources:
            return None
        return await gitsources.last_synced_revision(self._store, name)

    async def delete_hooks(
        self, name: str, config: SourceConfig, phase: HookPhase, *, revision: str | None
    ) -> list[str]:
        from .tree.deletehooks import DeleteHooks

        hooks = DeleteHooks(
            store=self._store,
            cache=self._cache,
            agent_name=self._options.agent_name,
            apply_mode=self._options.apply_mode,
            state_dir=self._options.state_dir,
            before_wait=self._before_wait,
            deadline=self._options.wait_deadline,
        )
        return await hooks.run(name, config, phase, revision=revision)

    def request_sync(self, name: str) -> None:
        if self._live is not None:
            self._live.request(name, Trigger.REQUEST)

    async def healthy(self, runner: SourceRunner) -> str | None:
        if self._before_wait is not None:
            await self._before_wait()
        from gitkrm.sync.gates import budget  # `run --once --wait --timeout` bounds the run

        timeout = budget(runner.config.health_timeout, self._options.wait_deadline)
        result = await wait_healthy(self._store, [runner], cache=self._cache, timeout=timeout)
        failure = None if result.ok else "; ".join(result.describe()[:3]) or "not healthy"
        from .tree import order

        order.health_checked(self.tree, runner.name, failure)
        return failure

    async def _waits(self, name: str) -> None:
        """Before source `name`'s sync waits (a wave, a hook, a prune wave): the embedded
        target's controllers start, and the tree finalizes the children whose declaring
        objects that sync deleted (a prune wave waits for them to be gone)."""
        if self._before_wait is not None:
            await self._before_wait()
        runner = self.runners.get(name)
        if runner is not None:
            await self.tree.finalize_deleted(runner)

    def synced_once(self) -> bool:
        """Whether every source that is not suspended finished a sync in this term."""
        return all(r.last_outcome is not None or r.config.suspend for r in self.runners.values())

    def applied(self) -> list[ObjectRef]:
        """The objects of every source's last sync (what `run --once --wait` waits for)."""
        return [ref for runner in self.runners.values() for ref in runner.applied]

    async def wait_healthy(
        self,
        *,
        timeout: float,  # noqa: ASYNC109 (the caller's budget, reported as timed_out)
        on_progress: Any = None,
    ) -> WaitResult:
        """Wait until every applied object is Current, one is Failed, or `timeout` passes."""
        result = await wait_healthy(
            self._store,
            list(self.runners.values()),
            cache=self._cache,
            timeout=timeout,
            on_progress=on_progress,
        )
        if self._tree is not None:  # the declaring objects say what the wait found
            from .tree.child import child_key

            for child in self._tree.runnable():
                self._tree.statuses.due(child_key(child.ref))
            await self._tree.statuses.flush()
        return result

    # -- long-lived --------------------------------------------------------------------

    async def start_workers(self) -> None:
        """One worker per source (a first sync asked for), the ticks, the watches."""
        from .workers import Workers

        self._live = Workers(self, store=self._store, cache=self._cache, options=self._options)
        await self._live.start()

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        self._tasks = [t for t in self._tasks if not t.done()]
        self._tasks.append(asyncio.create_task(coro, name=name))

    async def _cancel_tasks(self) -> None:
        self._stopping = True
        if self._live is not None:
            await self._live.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def stop_workers(self, *, forced: asyncio.Event) -> None:
        """Graceful: no new sync starts, the ones under way finish (up to the grace period,
        or until `forced` is set: then they are cancelled)."""
        await self._cancel_tasks()
        if self._live is not None:
            await self._live.stop(forced=forced, grace=self._options.grace)
        log.info("agent %s stopped", self._options.agent_name)

    # -- end ---------------------------------------------------------------------------

    async def end(self, *, flush: bool) -> None:
        """Stop workers and watches at once, close reports and runners. `flush` (a graceful
        end, the workers already stopped): give the reports up to `report_flush_timeout` to
        reach Git first. Without it (a lost Lease) the syncs are cancelled before anything
        else."""
        if flush:
            if self._live is None:
                # `run --once`: nothing syncs any more. The engines' drift informers,
                # still to list what they follow, stop before the reports are written.
                for runner in self.runners.values():
                    await runner.close_engine()
            await self._reports.end(flush=True)
        await self._cancel_tasks()
        if self._live is not None:
            await self._live.close()  # the workers cancelled at once, and awaited
        if flush:
            await lastsync.record_settled(
                self._store,
                list(self.runners.values()),
                ours=set() if self._tree is None else self._tree.statuses.written,
                state_dir=self._options.state_dir,
                # On a cluster the next run's Lease moves the resourceVersion: the digest.
                by_digest=self._options.target_url is not None,
            )
        else:
            await self._reports.end(flush=False)
        for runner in self.runners.values():
            await runner.close()
        self.runners.clear()
