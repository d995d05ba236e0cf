"""The agent: one process keeping a target equal to N sources.

Embedded target: at start it opens the store (as its one writer), installs the GitSource CRD
and writes one GitSource object per configured source. Then either `sync_once` (run --once)
or `run` (long-lived): apscheduler ticks, local changes (watchfiles) and edits of the
GitSource objects (spec changes, the `gitkrm.io/requestedAt` annotation) ask each source's
worker for a sync; SIGTERM/SIGINT stop it gracefully.

Cluster target (`target_url`, a `kube://` URL): the same, but only while this replica holds
the agent's Lease (`gitkrm.agent.leader`, driven by `gitkrm.agent.leading`). Everything that
writes (GitSource objects, syncs, reports into Git) belongs to a *term*: `begin` when the
Lease is acquired, `end` when it is released (a graceful stop) or lost (cancelled at once,
mid-sync if need be). No CRD is installed and no controllers run: the cluster has its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitkrm.cache import WatchCache
from gitkrm.errors import BadRequest, GitkrmError
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store import Store, open_store
from gitkrm.store.protocol import meta

from . import crd, gitsources, lastsync
from .config import ApplyMode, SourceConfig, unique_names
from .crd import REQUESTED_AT
from .leader import NAMESPACE as LEASE_NAMESPACE
from .leader import LeaderElector, LeaseTimings
from .runner import SourceRunner
from .scheduler import Scheduler, SourceWorker, Trigger
from .shutdown import DEFAULT_GRACE, Shutdown, wait_or_force
from .state import git_cache, last_sync_file, store_url
from .status import Outcome

if TYPE_CHECKING:
    # Imported where used: `run --once` on an unchanged source loads no controllers,
    # server, reporter or leader election (tests/cli/test_imports.py).
    from gitkrm.controllers import ControllerManager, ControllerOptions
    from gitkrm.health import WaitResult
    from gitkrm.report import HealthFollower, PushState, Reporter
    from gitkrm.server.tls import TLSFiles

log = logging.getLogger("gitkrm.agent")


@dataclass(frozen=True, slots=True)
class AgentOptions:
    state_dir: Path
    agent_name: str
    sources: tuple[SourceConfig, ...]
    apply_mode: ApplyMode = "client-side"
    listen: tuple[str, int] | None = None
    """Where the long-lived agent serves the Kubernetes API (embedded target) or its
    probes and metrics (cluster target); None: nothing is served."""
    grace: float = DEFAULT_GRACE
    watch_changes: bool = True
    controllers: ControllerOptions | None = None
    """Run the bundled controllers against the store (the embedded target), None: don't."""
    report: bool = True
    """Write notes and the status file into the sources' Git remotes."""
    report_flush_timeout: float = 5.0
    api_token: str | None = None
    """The bearer token of the embedded API (needed beyond loopback)."""
    api_tls: TLSFiles | None = None
    target_url: str | None = None
    """The cluster target (`kube://?kubeconfig=...`); None: the embedded store of state_dir."""
    lease: LeaseTimings = field(default_factory=LeaseTimings)
    lease_namespace: str = LEASE_NAMESPACE
    identity: str | None = None
    """This replica's Lease holder identity (default `<hostname>_<random>`)."""
    skip_unchanged: bool = False
    """`run --once` without `--wait`: a source whose revision and store did not change
    since its last settled sync is not synced again (see `lastsync`)."""
    follow_health: bool = True
    track_drift: bool = True
    """Follow the owned kinds for drift after each sync (`run --once` ends instead)."""
    """Follow the health of each sync's objects into the reports. `run --once` without
    `--wait` ends right after its sync: its reports carry the health read at sync time."""


class Agent:
    """See the module docstring. `open` first, `close` last (also after errors)."""

    def __init__(self, options: AgentOptions) -> None:
        unique_names(options.sources)
        if options.target_url is not None and options.controllers is not None:
            raise BadRequest("the bundled controllers run on the embedded target only")
        self.options = options
        # Set once something serves /metrics: sync durations go there.
        self.observe_sync: Callable[[str, str, float], None] | None = None
        self.store: Store | None = None
        self.cache: WatchCache | None = None
        """The store's one watch cache: controllers, drift, health follower and --wait."""
        self.runners: dict[str, SourceRunner] = {}
        self.workers: dict[str, SourceWorker] = {}
        self.scheduler = Scheduler()
        self._tasks: list[asyncio.Task[None]] = []
        self.replaced: dict[str, asyncio.Event] = {}
        self.pending_spec: dict[str, Obj] = {}
        self.stopping = False
        self.controllers: ControllerManager | None = None
        self.reporter: Reporter | None = None
        self.follower: HealthFollower | None = None
        self.elector: LeaderElector | None = None
        """The cluster target's Lease candidate (None on the embedded target)."""
        self.holding: asyncio.Task[None] | None = None
        """While leading: the renewals, done when the Lease is lost (or released)."""
        self.gitsources = True
        """Whether the target serves the GitSource kind (a cluster may lack the CRD)."""
        self._said_no_crd = False

    @property
    def cluster(self) -> bool:
        return self.options.target_url is not None

    # -- setup -------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect to the target. Embedded: also begin the (only) term."""
        state = self.options.state_dir
        state.mkdir(parents=True, exist_ok=True)
        if self.options.target_url is None:
            self.store = await open_store(store_url(state))
            self.cache = WatchCache(self.store)
            await crd.install(self.store)
            await self.begin()
            return
        self.store = await open_store(self.options.target_url)
        self.cache = WatchCache(self.store)
        await self._probe_gitsources()  # also: the cluster answers (else a setup error)
        self.elector = LeaderElector(
            self.store,
            agent_name=self.options.agent_name,
            identity=self.options.identity,
            timings=self.options.lease,
            namespace=self.options.lease_namespace,
        )

    async def _probe_gitsources(self) -> None:
        """On a cluster: whether it serves the GitSource kind now (the chart may have
        installed the CRD since the last term); said once when it does not."""
        self.gitsources = await gitsources.served(self.require_store())
        if not self.gitsources and not self._said_no_crd:
            self._said_no_crd = True
            log.warning(
                "the cluster has no GitSource kind (CRD %s, installed by the Helm chart): "
                "sources are synced, their status is not kept in GitSource objects",
                crd.CRD_NAME,
            )

    async def begin(self) -> None:
        """Start a term: reports, GitSource objects and one runner per source."""
        store = self.require_store()
        self.stopping = False
        if self.cluster:
            await self._probe_gitsources()
        if self.gitsources:
            wanted = {c.name for c in self.options.sources}
            await gitsources.forget_unconfigured(
                store, agent_name=self.options.agent_name, wanted=wanted
            )
        for config in self.options.sources:
            live: Obj = {}
            if self.gitsources:
                live = await gitsources.ensure(store, config, agent_name=self.options.agent_name)
            runner = SourceRunner(
                store=store,
                config=config,
                agent_name=self.options.agent_name,
                apply_mode=self.options.apply_mode,
                git_cache=git_cache(self.options.state_dir, config.name),
                live=live,
                state_dir=self.options.state_dir,
                skip_unchanged=self.options.skip_unchanged,
                cache=self.cache,
                track_drift=self.options.track_drift,
            )
            if self.options.skip_unchanged:
                runner.before_pass = self._start_reports  # nothing to do: nothing reported
            if not self.gitsources:
                desired = config.to_object(agent_name=self.options.agent_name)
                runner.writer = gitsources.NoStatusWriter(store, desired=desired)
            runner.observe = self._observe
            self.runners[config.name] = runner
            # A request made while no agent ran is handled by the first sync.
            asked = (meta(live).get("annotations") or {}).get(REQUESTED_AT)
            handled = (live.get("status") or {}).get("lastHandledRequestedAt")
            runner.requested_at = asked or handled
        if not self.options.skip_unchanged:
            self._start_reports()

    def _start_reports(self) -> None:
        """The reporter and the health follower of the term, every runner's source
        registered: made as the term begins, or (`skip_unchanged`) before the first pass
        that syncs, so that a run with nothing to do does not load them at all."""
        if not self.options.report or self.reporter is not None:
            return
        from gitkrm.report.reporter import Reporter

        self.reporter = Reporter(
            agent_name=self.options.agent_name, on_push_state=self._on_push_state
        )
        if self.options.follow_health:
            from gitkrm.report.follow import HealthFollower

            self.follower = HealthFollower(self.require_store(), self.reporter, self.cache)
        for name, runner in self.runners.items():
            runner.reporter = self.reporter
            runner.follower = self.follower
            self.reporter.register(name, runner.source)

    async def end(self, *, flush: bool) -> None:
        """End the term: stop workers and watches at once, close reports and runners.
        `flush` (a graceful end, the workers already stopped): give the reports up to
        `report_flush_timeout` to reach Git first. Without it (a lost Lease) the syncs are
        cancelled before anything else."""
        if flush:
            if not self.workers:
                # `run --once`: nothing syncs any more. The engines' drift informers,
                # still to list what they follow, stop before the reports are written.
                for runner in self.runners.values():
                    await runner.close_engine()
            await self._end_reports(flush=True)
        self.stopping = True
        self.scheduler.shutdown()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for worker in self.workers.values():
            await worker.stop(grace=0)  # cancelled at once, and awaited
        self._tasks.clear()
        if flush:
            await self._record_last_syncs()
        else:
            await self._end_reports(flush=False)
        for runner in self.runners.values():
            await runner.close()
        self.runners.clear()
        self.workers.clear()
        self.replaced.clear()
        self.pending_spec.clear()
        self.scheduler = Scheduler()

    async def _record_last_syncs(self) -> None:
        """Record each source's last settled sync at the store's revision now, when every
        write since that sync was the agent's own GitSource status (see `lastsync`)."""
        store = self.store
        settled = [r for r in self.runners.values() if r.last_sync is not None]
        if store is None or not settled:
            return
        try:
            store_id, now = await lastsync.store_position(store)
        except GitkrmError as e:
            log.debug("the last syncs are not recorded: %s", e.message)
            return
        ours: set[int] = set()
        for runner in self.runners.values():
            ours |= runner.written
        for runner in settled:
            record = runner.last_sync
            assert record is not None
            if (record.store_id, record.resource_version) == (store_id, now):
                continue  # recorded as it is (a pass with nothing to do)
            from gitkrm.sync.engine import contiguous

            if not contiguous(record.resource_version, now, ours):
                continue
            done = dataclasses.replace(record, store_id=store_id, resource_version=now)
            if done != record:
                lastsync.save(last_sync_file(self.options.state_dir, runner.name), done)

    async def _end_reports(self, *, flush: bool) -> None:
        try:
            async with asyncio.timeout(self.options.report_flush_timeout + 5):
                await self._close_reports(flush=flush)
        except TimeoutError:
            log.warning("the reports into Git did not finish before the agent ended")

    def _on_push_state(self, name: str, state: PushState) -> None:
        """The reporter's push state changed: into the GitSource status (in the background)."""
        runner = self.runners.get(name)
        if runner is None or self.stopping:
            return
        self._spawn(runner.set_report_state(state.to_status()), f"gitkrm-report-{name}")

    async def start_controllers(self) -> None:
        """Start the bundled controllers on the store (when the options ask for them)."""
        if self.options.controllers is None or self.controllers is not None:
            return
        from gitkrm.controllers import ControllerManager

        self.controllers = ControllerManager(
            store=self.require_store(), options=self.options.controllers, cache=self.cache
        )
        await self.controllers.start()

    async def stop_controllers(self) -> None:
        """Stop the controllers gracefully: work in flight finishes."""
        manager, self.controllers = self.controllers, None
        if manager is not None:
            await manager.stop()

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
        from gitkrm.health import wait_for

        result = await wait_for(
            self.require_store(),
            self.applied(),
            timeout=timeout,
            on_progress=on_progress,
            cache=self.cache,
        )
        for runner in self.runners.values():
            await runner.record_health(result.results)
        return result

    def require_store(self) -> Store:
        """The open store (RuntimeError before `open`)."""
        if self.store is None:
            raise RuntimeError("the agent is not open")
        return self.store

    # -- one pass ----------------------------------------------------------------------

    async def sync_once(self, shutdown: Shutdown | None = None) -> list[Outcome]:
        """Sync every source that is not suspended, one after the other. On a cluster:
        first wait for the Lease; when it is lost mid-way, the sync is cancelled."""
        if self.elector is None:
            return await self.sync_all(shutdown, [])
        from . import leading

        return await leading.sync_once(self, shutdown)

    async def sync_all(self, shutdown: Shutdown | None, outcomes: list[Outcome]) -> list[Outcome]:
        for runner in self.runners.values():
            if shutdown is not None and shutdown.requested.is_set():
                break
            if runner.config.suspend:
                log.info("source %s is suspended: not synced", runner.name)
                continue
            outcome = await runner.reconcile(frozenset({Trigger.START}))
            if outcome is not None:
                outcomes.append(outcome)
        return outcomes

    def _observe(self, source: str, result: str, seconds: float) -> None:
        if self.observe_sync is not None:
            self.observe_sync(source, result, seconds)

    def synced_once(self) -> bool:
        """Whether every source that is not suspended finished a sync in this term."""
        return all(r.last_outcome is not None or r.config.suspend for r in self.runners.values())

    # -- long-lived --------------------------------------------------------------------

    async def run(self, shutdown: Shutdown) -> None:
        """Serve, then sync until `shutdown` is requested, then stop gracefully."""
        if self.elector is not None:
            from . import leading

            await leading.run(self, shutdown)
            return
        store = self.require_store()
        api = None
        if self.options.listen is not None:
            from .api import ApiService

            host, port = self.options.listen
            api = ApiService(
                store,
                host=host,
                port=port,
                state_dir=self.options.state_dir,
                token=self.options.api_token,
                tls=self.options.api_tls,
            )
            await api.start()
            shutdown.install()  # again: uvicorn took the signals when it started
            self.observe_sync = api.observe_sync
        try:
            await self.start_controllers()
            await self.start_workers()
            await shutdown.requested.wait()
            await self.stop_workers(forced=shutdown.forced)
        finally:
            await self.stop_controllers()
            if api is not None:
                await api.stop()

    async def start_workers(self) -> None:
        """One worker per source (a first sync asked for), the ticks, the watches."""
        from . import steering

        store = self.require_store()
        for name, runner in self.runners.items():
            worker = SourceWorker(name, self._reconciler(name))
            self.workers[name] = worker
            self.replaced[name] = asyncio.Event()
            self.scheduler.add(worker, interval=runner.config.interval)
            worker.start()
            worker.request(Trigger.START)
            if self.options.watch_changes:
                self._spawn(steering.watch_changes(self, name), f"gitkrm-changes-{name}")
        if self.gitsources:
            listed = await store.list(crd.GITSOURCE_GVK, crd.NAMESPACE)
            rv = listed["metadata"]["resourceVersion"]
            self._spawn(steering.watch_gitsources(self, rv), "gitkrm-gitsources")
        self.scheduler.start()
        log.info(
            "agent %s running %d source(s): %s",
            self.options.agent_name,
            len(self.runners),
            ", ".join(f"{r.name}={r.config.safe_url}" for r in self.runners.values()),
        )

    def _spawn(self, coro: Any, name: str) -> None:
        self._tasks = [t for t in self._tasks if not t.done()]
        self._tasks.append(asyncio.create_task(coro, name=name))

    def _reconciler(self, name: str) -> Any:
        async def reconcile(triggers: frozenset[Trigger]) -> None:
            runner = self.runners[name]
            pending = self.pending_spec.pop(name, None)
            if pending is not None:
                from . import steering

                await steering.apply_spec(self, runner, pending)
            await runner.reconcile(triggers)

        return reconcile

    async def stop_workers(self, *, forced: asyncio.Event) -> None:
        """Graceful: no new sync starts, the ones under way finish (up to the grace period,
        or until `forced` is set: then they are cancelled)."""
        self.stopping = True
        self.scheduler.shutdown()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        stops = [w.stop(grace=self.options.grace) for w in self.workers.values()]
        stopping: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(*stops))

        def cancel_all() -> None:
            for w in self.workers.values():
                w.cancel()

        await wait_or_force(
            stopping, forced=forced, grace=self.options.grace + 1, on_force=cancel_all
        )
        log.info("agent %s stopped", self.options.agent_name)

    async def _close_reports(self, *, flush: bool) -> None:
        follower, self.follower = self.follower, None
        if follower is not None:
            await follower.close()
        reporter, self.reporter = self.reporter, None
        if reporter is not None:
            timeout = self.options.report_flush_timeout
            if flush and not await reporter.flush(timeout=timeout):
                log.warning("some reports did not reach their Git remote before the agent ended")
            await reporter.close()

    async def close(self) -> None:
        """Release everything (after `run` returned, or instead of it after an error)."""
        await self.stop_controllers()
        await self.end(flush=True)
        if self.holding is not None:
            self.holding.cancel()
            await asyncio.gather(self.holding, return_exceptions=True)
            self.holding = None
        if self.elector is not None and self.store is not None:
            try:
                async with asyncio.timeout(self.options.lease.renew_deadline):
                    await self.elector.release()
            except TimeoutError:
                log.warning("the lease was not released in time: it expires on its own")
        if self.cache is not None:
            await self.cache.stop()
            self.cache = None
        if self.store is not None:
            await self.store.close()
            self.store = None


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """`run --once`: 0 when every source synced, 1 when any failed (or refused an object)."""
    return 0 if all(o.succeeded for o in outcomes) else 1
