"""A term: the span during which the agent writes to its target, and everything it owns.

A term keeps the GitSource objects, one `SourceRunner` per source, and, while the agent
runs long-lived, one `SourceWorker` per source with its ticks (`Scheduler`), the watches that
steer it (`steering`: local changes, GitSource edits) and the reports into Git (`Reporter`,
`HealthFollower`). The embedded target runs one term for the agent's whole life; the cluster
target one per leadership (`gitkrm.agent.cluster`). A term is begun and ended by the agent
(`Agent.begin`, `Agent.end`), its one owner; targets drive what it does in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from gitkrm.cache import WatchCache
from gitkrm.errors import GitkrmError, NotFound
from gitkrm.krm import GVK, Obj, ObjectRef, ResourceKey
from gitkrm.store import Store
from gitkrm.store.protocol import meta

from . import crd, gitsources, lastsync
from .crd import REQUESTED_AT
from .runner import SourceRunner
from .scheduler import Reconcile, Scheduler, SourceWorker, Trigger
from .shutdown import Shutdown, wait_or_force
from .state import git_cache, last_sync_file
from .status import Outcome

if TYPE_CHECKING:
    from gitkrm.health import WaitResult
    from gitkrm.report import HealthFollower, PushState, Reporter
    from gitkrm.sync.hooks import Phase as HookPhase

    from .agent import AgentOptions
    from .config import SourceConfig
    from .tree.children import Tree
    from .tree.watch import DeclaringWatch

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
        self._workers: dict[str, SourceWorker] = {}
        self._scheduler = Scheduler()
        self._scheduler_started = False
        self._tasks: list[asyncio.Task[None]] = []
        self._replaced: dict[str, asyncio.Event] = {}
        """Per source: set when a spec edit replaced its source (the change watch restarts)."""
        self._pending_spec: dict[str, Obj] = {}
        """Per source: the edited GitSource its next sync takes its spec from."""
        self._stopping = False
        self._reporter: Reporter | None = None
        self._follower: HealthFollower | None = None
        self._tree: Tree | None = None
        self._crds_done: set[str] = set()
        self._declaring: DeclaringWatch | None = None
        self._pending_child: dict[str, tuple[SourceConfig, int]] = {}
        """Per child: the spec its next sync takes (its declaring object changed)."""

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
        return self._reporter

    @property
    def follower(self) -> HealthFollower | None:
        return self._follower

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
        if self._reporter is not None:
            runner.reporter = self._reporter
            runner.follower = self._follower
            self._reporter.register(config.name, runner.source, parent=runner.parent)
        return runner

    def start_reports(self) -> None:
        """The reporter and the health follower of the term, every runner's source
        registered: made as the term begins, or (`skip_unchanged`) before the first pass
        that syncs, so that a run with nothing to do does not load them at all."""
        options = self._options
        if not options.report or self._reporter is not None:
            return
        from gitkrm.report.reporter import Reporter

        self._reporter = Reporter(agent_name=options.agent_name, on_push_state=self._on_push_state)
        if options.follow_health:
            from gitkrm.report.follow import HealthFollower

            self._follower = HealthFollower(self._store, self._reporter, self._cache)
        for name, runner in self.runners.items():
            runner.reporter = self._reporter
            runner.follower = self._follower
            self._reporter.register(name, runner.source, parent=runner.parent)

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
        if self._scheduler_started:
            self._start_worker(config.name, runner)
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
        worker = self._workers.get(name)
        if worker is None:
            await runner.reconfigure(config, generation=generation)  # run --once: no sync runs
            return
        # Taken at the start of the child's next sync, never under a sync that runs now.
        self._pending_child[name] = (config, generation)
        worker.request(Trigger.SPEC)

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

    async def stop_child(self, name: str) -> None:
        worker = self._workers.pop(name, None)
        if worker is not None:
            self._scheduler.remove(name)
            if asyncio.current_task() is not getattr(worker, "_task", None):
                await worker.stop(grace=0)
        self._replaced.pop(name, None)
        self._pending_child.pop(name, None)
        runner = self.runners.pop(name, None)
        if runner is not None:
            await runner.close()
        if self._reporter is not None:
            self._reporter.unregister(name)
        if self._follower is not None:
            self._follower.stop(name)
        if self.gitsources:
            from .status import gitsource_ref

            with contextlib.suppress(NotFound):
                await self._store.delete(gitsource_ref(name))

    async def remembered(self, parent: str) -> dict[str, ObjectRef]:
        from .tree.naming import parse_ref_text

        if not self.gitsources:
            return {}
        found = await gitsources.children_of(
            self._store, agent_name=self._options.agent_name, parent=parent
        )
        return {n: r for n, text in found.items() if (r := parse_ref_text(text)) is not None}

    async def last_revision(self, name: str) -> str | None:
        runner = self.runners.get(name)
        if runner is not None:
            found = runner.synced_revision or runner.status.get("lastSyncedRevision")
            return str(found) if found else None
        if not self.gitsources:
            return None
        from .status import gitsource_ref

        try:
            live = await self._store.get(gitsource_ref(name))
        except NotFound:
            return None
        found = (live.get("status") or {}).get("lastSyncedRevision")
        return str(found) if found else None

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
        )
        return await hooks.run(name, config, phase, revision=revision)

    def request_sync(self, name: str) -> None:
        worker = self._workers.get(name)
        if worker is not None:
            worker.request(Trigger.REQUEST)

    async def healthy(self, runner: SourceRunner) -> str | None:
        from gitkrm.health import HealthChecks, wait_for

        if self._before_wait is not None:
            await self._before_wait()
        timeout = runner.config.health_timeout
        deadline = self._options.wait_deadline
        if deadline is not None:  # `run --once --wait --timeout` bounds the whole run
            timeout = min(timeout, max(0.0, deadline - time.monotonic()))
        result = await wait_for(
            self._store,
            runner.applied,
            timeout=timeout,
            cache=self._cache,
            ttl_jobs=runner.ttl_jobs,
            checks=HealthChecks.merged([runner.config.health_checks]),
        )
        await runner.record_health(result.results)
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
        from gitkrm.health import HealthChecks, wait_for

        result = await wait_for(
            self._store,
            self.applied(),
            timeout=timeout,
            on_progress=on_progress,
            cache=self._cache,
            ttl_jobs=frozenset().union(*(r.ttl_jobs for r in self.runners.values())),
            checks=HealthChecks.merged(r.config.health_checks for r in self.runners.values()),
        )
        for runner in self.runners.values():
            await runner.record_health(result.results)
        if self._tree is not None:  # the declaring objects say what the wait found
            from .tree.child import child_key

            for child in self._tree.runnable():
                self._tree.statuses.due(child_key(child.ref))
            await self._tree.statuses.flush()
        return result

    # -- long-lived --------------------------------------------------------------------

    async def start_workers(self) -> None:
        """One worker per source (a first sync asked for), the ticks, the watches."""
        from . import steering

        self._scheduler_started = True
        for name, runner in self.runners.items():
            self._start_worker(name, runner)
        if self.gitsources:
            listed = await self._store.list(crd.GITSOURCE_GVK, crd.NAMESPACE)
            rv = listed["metadata"]["resourceVersion"]
            watch = steering.watch_gitsources(
                self._store, rv, on_gitsource=self._on_gitsource, stopping=lambda: self._stopping
            )
            self._spawn(watch, "gitkrm-gitsources")
        self._scheduler.start()
        log.info(
            "agent %s running %d source(s): %s",
            self._options.agent_name,
            len(self.runners),
            ", ".join(f"{r.name}={r.config.safe_url}" for r in self.runners.values()),
        )

    def _start_worker(self, name: str, runner: SourceRunner) -> None:
        """A source's worker (a first sync asked for), its ticks and its change watch."""
        from . import steering

        worker = SourceWorker(name, self._reconciler(name))
        self._workers[name] = worker
        replaced = self._replaced[name] = asyncio.Event()
        self._scheduler.add(worker, interval=runner.config.interval)
        worker.start()
        worker.request(Trigger.START)
        if self._options.watch_changes:
            watch = steering.watch_changes(
                runner, worker, replaced=replaced, stopping=lambda: self._stopping
            )
            self._spawn(watch, f"gitkrm-changes-{name}")

    def _on_gitsource(self, obj: Obj) -> None:
        from . import steering

        name = meta(obj).get("name", "")
        runner = self.runners.get(name)
        worker = self._workers.get(name)
        if runner is None or worker is None:
            return
        pending = steering.on_gitsource(runner, worker, obj)
        if pending is not None and self.tree.by_name(name) is None:
            # A child's spec is its declaring object's: an edit of its GitSource is not used.
            self._pending_spec[name] = pending

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        self._tasks = [t for t in self._tasks if not t.done()]
        self._tasks.append(asyncio.create_task(coro, name=name))

    def _reconciler(self, name: str) -> Reconcile:
        async def reconcile(triggers: frozenset[Trigger]) -> None:
            runner = self.runners.get(name)
            if runner is None:
                return  # a child stopped meanwhile
            if self.tree.by_name(name) is not None:
                from .tree import order

                await self._reconfigure_pending(name, runner)
                await order.sync_child(self.tree, name, triggers)
                await self.tree.statuses.flush()
                self._follow_declaring()
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
            await self.tree.after_pass(runner)
            self._follow_declaring()

        return reconcile

    def _follow_declaring(self) -> None:
        """Hear of the deletion of any declaring object at once (long-lived)."""
        if self._tree is None or not self._tree.children:
            return
        if self._declaring is None:
            from .tree.watch import DeclaringWatch

            self._declaring = DeclaringWatch(
                self._cache, self._declaring_deleted, on_read=self._read_changed
            )
        self._declaring.follow(GVK.of(c.obj) for c in self._tree.children.values() if c.obj)
        self._declaring.follow_reads(self._tree.read_kinds())

    def _read_changed(self, key: ResourceKey, resource_version: str | None) -> None:
        """An object children were read from changed (an AppProject): their parents'
        passes re-read them."""
        if self._tree is None:
            return
        for parent in self._tree.readers(key, resource_version):
            worker = self._workers.get(parent)
            if worker is not None:
                worker.request(Trigger.CHANGE)

    def _declaring_deleted(self, key: ResourceKey) -> None:
        child = None if self._tree is None else self._tree.children.get(key)
        worker = None if child is None else self._workers.get(child.parent)
        if worker is not None:
            worker.request(Trigger.CHANGE)  # its pass removes the child

    async def _cancel_tasks(self) -> None:
        self._stopping = True
        self._scheduler.shutdown()
        declaring, self._declaring = self._declaring, None
        if declaring is not None:
            await declaring.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def stop_workers(self, *, forced: asyncio.Event) -> None:
        """Graceful: no new sync starts, the ones under way finish (up to the grace period,
        or until `forced` is set: then they are cancelled)."""
        await self._cancel_tasks()
        grace = self._options.grace
        stops = [w.stop(grace=grace) for w in self._workers.values()]
        stopping: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(*stops))

        def cancel_all() -> None:
            for w in self._workers.values():
                w.cancel()

        await wait_or_force(stopping, forced=forced, grace=grace + 1, on_force=cancel_all)
        log.info("agent %s stopped", self._options.agent_name)

    # -- end ---------------------------------------------------------------------------

    async def end(self, *, flush: bool) -> None:
        """Stop workers and watches at once, close reports and runners. `flush` (a graceful
        end, the workers already stopped): give the reports up to `report_flush_timeout` to
        reach Git first. Without it (a lost Lease) the syncs are cancelled before anything
        else."""
        if flush:
            if not self._workers:
                # `run --once`: nothing syncs any more. The engines' drift informers,
                # still to list what they follow, stop before the reports are written.
                for runner in self.runners.values():
                    await runner.close_engine()
            await self._end_reports(flush=True)
        await self._cancel_tasks()
        for worker in self._workers.values():
            await worker.stop(grace=0)  # cancelled at once, and awaited
        if flush:
            await self._record_last_syncs()
        else:
            await self._end_reports(flush=False)
        for runner in self.runners.values():
            await runner.close()
        self.runners.clear()
        self._workers.clear()
        self._replaced.clear()
        self._pending_spec.clear()
        self._pending_child.clear()

    async def _record_last_syncs(self) -> None:
        """Record each source's last settled sync at the store's revision now, when every
        write since that sync was the agent's own GitSource status, or else with the digest
        of its owned objects when they stand as it left them (see `lastsync`)."""
        settled = [r for r in self.runners.values() if r.last_sync is not None]
        if not settled:
            return
        try:
            store_id, now = await lastsync.store_position(self._store)
        except GitkrmError as e:
            log.debug("the last syncs are not recorded: %s", e.message)
            return
        ours: set[int] = set() if self._tree is None else set(self._tree.statuses.written)
        for runner in self.runners.values():
            ours |= runner.written
        for runner in settled:
            record = runner.last_sync
            assert record is not None
            if (record.store_id, record.resource_version) == (store_id, now):
                continue  # recorded as it is (a pass with nothing to do)
            from gitkrm.sync.live import contiguous

            done: lastsync.LastSync | None = dataclasses.replace(
                record, store_id=store_id, resource_version=now
            )
            if not contiguous(record.resource_version, now, ours):
                done = None  # others wrote meanwhile: the owned objects' digest may tell
            if done is None or self._options.target_url is not None:
                # On a cluster the next run's Lease moves the resourceVersion: always the digest.
                try:
                    found = await lastsync.with_owned(
                        self._store, record, config=runner.config, settled=runner.settled_objects()
                    )
                except GitkrmError as e:
                    log.debug("the last sync of %s is not recorded: %s", runner.name, e.message)
                    continue
                if found is not None:
                    done = dataclasses.replace(found, store_id=store_id, resource_version=now)
            if done is None:
                continue
            if done != record:
                lastsync.save(last_sync_file(self._options.state_dir, runner.name), done)

    async def _end_reports(self, *, flush: bool) -> None:
        try:
            async with asyncio.timeout(self._options.report_flush_timeout + 5):
                await self._close_reports(flush=flush)
        except TimeoutError:
            log.warning("the reports into Git did not finish before the agent ended")

    async def _close_reports(self, *, flush: bool) -> None:
        follower, self._follower = self._follower, None
        if follower is not None:
            await follower.close()
        reporter, self._reporter = self._reporter, None
        if reporter is not None:
            timeout = self._options.report_flush_timeout
            if flush and not await reporter.flush(timeout=timeout):
                log.warning("some reports did not reach their Git remote before the agent ended")
            await reporter.close()
