"""What a source runner tells of its passes: the GitSource status, the health of the
objects it synced, the reports into Git, the log line and the metrics.

`SourceRunner` (`gitkrm.agent.runner`) does the passes; this base class keeps what they
leave for others to read (`status`, `health`, `applied`, `last_outcome`, ...) and writes
it. A failed status write is logged, never raised: the next pass writes again.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gitkrm.cache import WatchCache
from gitkrm.errors import GitkrmError
from gitkrm.health import Health, HealthResult, aggregate, health_of
from gitkrm.krm import GVK, Obj, ObjectRef, ResourceKey
from gitkrm.krm.clock import now_rfc3339
from gitkrm.store import Store
from gitkrm.store.protocol import meta
from gitkrm.sync import live
from gitkrm.sync.objkey import object_key
from gitkrm.sync.results import Action, SyncResult

from . import lastsync
from . import status as st
from .config import SourceConfig
from .logging import log_sync, sync_fields
from .sync_events import OutcomeEvents

if TYPE_CHECKING:
    from gitkrm.health import WaitResult
    from gitkrm.report import HealthFollower, Reporter
    from gitkrm.sync.engine import SyncEngine

log = logging.getLogger("gitkrm.agent")

_NOT_FOLLOWED = frozenset({Action.PRUNED, Action.SKIPPED})


class RunnerReports(abc.ABC):
    """See the module docstring."""

    def __init__(
        self,
        *,
        store: Store,
        config: SourceConfig,
        agent_name: str,
        live: Obj | None,
        reporter: Reporter | None,
        follower: HealthFollower | None,
    ) -> None:
        self.store = store
        self.config = config
        self.agent_name = agent_name
        self.reporter = reporter
        self.follower = follower
        # Called with (source, result, seconds) after each sync: the API server's metrics.
        self.observe: Callable[[str, str, float], None] | None = None
        self.writer = st.StatusWriter(store, desired=config.to_object(agent_name=agent_name))
        live = live or {}
        self.status: dict[str, Any] = dict(live.get("status") or {})
        self._status_lock = asyncio.Lock()
        """One status write at a time, each made from the status the last one wrote: a
        report state written beside a sync's end must not put back the status before it."""
        self._writes_stopped = False
        """Set by `stop_writes`: the source is going, its GitSource must not come back."""
        self.generation: int = int((live.get("metadata") or {}).get("generation") or 1)
        self.requested_at: str | None = None
        self.synced_revision: str | None = None
        self.last_ok = False
        self.last_outcome: st.Outcome | None = None
        self.applied: tuple[ObjectRef, ...] = ()
        """The objects of the last sync or drift check (not pruned or skipped): what
        `run --once --wait` waits for and the health follower follows."""
        self.health: dict[ObjectRef, HealthResult] = {}
        self.ttl_jobs: frozenset[ResourceKey] = frozenset()
        """Jobs of the last sync that delete themselves when finished (gone means done)."""
        self.last_sync: lastsync.LastSync | None = None
        """The last sync that settled, at the store revision right after it (the agent
        records it when it ends: see `lastsync`); None after a failure."""
        self.written: set[int] = set()
        """The store revisions of this runner's writes (its GitSource, its Events)."""
        self.source_obj: Obj | None = None
        """The GitSource as this runner last wrote it (what its Events are about)."""
        self.events = OutcomeEvents(store, on_written=self._note_written)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    @abc.abstractmethod
    def engine(self) -> SyncEngine:
        """The source's sync engine (what it wrote and read: the objects' health)."""

    async def _report(self, result: SyncResult, *, quiet: bool = False) -> None:
        """Judge the health of the result's objects, tell the reporter, follow them.

        The objects are read a kind at a time (one paged list of the kind, or a get each
        for a few); a quiet drift check of the same objects reads nothing: the
        follower's watches keep their verdicts current."""
        refs = tuple(o.ref for o in result.objects if o.action not in _NOT_FOLLOWED)
        self.ttl_jobs = self.engine.jobs_with_ttl()
        if quiet and refs == self.applied and set(refs) == set(self.health):
            health = self.health
        else:
            health = await self._read_health(refs)
        self.applied = refs
        self.health = health
        if self.reporter is None:
            return
        await self.reporter.record_sync(source_name=self.name, result=result, health=health)
        if self.follower is not None:
            self.follower.follow(
                self.name,
                result.revision,
                refs,
                ttl_jobs=self.ttl_jobs,
                checks=self.config.health_checks,
            )

    async def _read_health(self, refs: tuple[ObjectRef, ...]) -> dict[ObjectRef, HealthResult]:
        versions: dict[tuple[str, str], GVK] = {}  # one lookup per kind, not per object
        wanted: dict[ObjectRef, GVK] = {}
        for ref in refs:
            gvk = versions.get((ref.group, ref.kind))
            if gvk is None:
                gvk = versions[ref.group, ref.kind] = self.engine.read_gvk(ref)
            wanted[ref] = gvk
        known = self.engine.take_live()  # what the sync just wrote or read: not read again
        objs: dict[ObjectRef, Obj | None] = {}
        for ref in refs:
            obj = known.get(object_key(ref))
            if obj is not None:
                objs[ref] = obj
                del wanted[ref]
        try:
            if wanted:
                objs.update(await live.read(self.store, wanted))
        except GitkrmError as e:
            log.debug("source %s: health not read: %s", self.name, e.message)
            return {}
        return {
            ref: health_of(
                obj, deletes_itself=ref.key in self.ttl_jobs, checks=self.config.health_checks
            )
            for ref, obj in objs.items()
        }

    def health_summary(self) -> dict[str, Any]:
        """The `status.health` of the GitSource: the aggregate health of the last sync."""
        verdicts = [h.status for h in self.health.values()]
        return {
            "status": aggregate(verdicts).value,
            "objects": len(verdicts),
            "notCurrent": sum(1 for v in verdicts if v is not Health.CURRENT),
        }

    async def record_health(self, verdicts: Mapping[ObjectRef, HealthResult]) -> None:
        """New verdicts for objects of the last sync (after waiting): into `status.health`."""
        self.health.update({r: h for r, h in verdicts.items() if r in self.health})
        summary = self.health_summary()
        await self._write(lambda old: None if old.get("health") == summary else
                          {**old, "health": summary})  # fmt: skip

    async def set_report_state(self, report: dict[str, Any]) -> None:
        """Write how the remote takes our reports into the GitSource status (`report`)."""
        await self._write(lambda old: None if old.get("report") == report else
                          {**old, "report": report})  # fmt: skip

    async def _progressing(self, revision: str) -> None:
        await self._write(
            lambda old: st.progressing(
                old, revision=revision, generation=self.generation, now=now_rfc3339()
            )
        )

    async def _finish(
        self, outcome: st.Outcome, *, trigger: str, requested: str | None, quiet: bool = False
    ) -> None:
        if outcome.succeeded and outcome.revision:
            self.synced_revision = outcome.revision
        self.last_ok = outcome.succeeded
        self._log_pass(outcome, trigger=trigger, quiet=quiet)
        previous = self.last_outcome
        self.last_outcome = outcome
        if quiet and previous is not None and previous.succeeded:
            return  # a drift check that found nothing: the status is already right

        def finished(old: dict[str, Any]) -> dict[str, Any]:
            status = st.finished(
                old, outcome, generation=self.generation, now=now_rfc3339(),
                requested_at=requested,
            )  # fmt: skip
            if self.health or outcome.succeeded:
                status["health"] = self.health_summary()
            return status

        # The Event before the status: the last settled sync is recorded at the store
        # revision of the status write, which a later write would move on.
        before = self.source_obj
        if before is not None and not outcome.nothing_changed:
            await self.events.record(before, outcome)
        await self._write(finished)
        if before is None and self.source_obj is not None and not outcome.nothing_changed:
            await self.events.record(self.source_obj, outcome)

    def _log_pass(self, outcome: st.Outcome, *, trigger: str, quiet: bool = False) -> None:
        """The log line of a pass (and its errors), and its time into the metrics."""
        result = "Succeeded" if outcome.succeeded else "Failed"
        fields = sync_fields(
            source=self.name,
            revision=outcome.revision,
            result=result,
            counts=outcome.counts,
            timings_ms=outcome.timings_ms,
            trigger=trigger,
        )
        if outcome.nothing_changed:
            fields["nothing_changed"] = True
        log_sync(fields, errors=tuple(outcome.errors), level=logging.DEBUG if quiet else 0)
        if self.observe is not None:
            self.observe(self.name, result, outcome.timings_ms.total / 1000)

    async def _write(self, update: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        """Write `update` of the status last written (None: nothing to write), one write
        at a time (see `_status_lock`)."""
        async with self._status_lock:
            if self._writes_stopped:
                return  # the writer would re-create a GitSource deleted with its source
            status = update(self.status)
            if status is None:
                return
            try:
                written = await self.writer.write(status)
            except GitkrmError as e:
                log.error("source %s: status not written: %s", self.name, e.message)
                self.last_sync = None  # the status must say what the record says
                return
            self.status = status
            self.source_obj = written
        self._note_written(written)

    async def stop_writes(self) -> None:
        """No status write after this one returns (one under way finishes first)."""
        async with self._status_lock:
            self._writes_stopped = True

    def _note_written(self, written: Obj) -> None:
        """A write of this runner's (its GitSource, its Events): see `written`."""
        rv = str(meta(written).get("resourceVersion") or "")
        if rv.isdigit():
            self.written.add(int(rv))


async def wait_healthy(
    store: Store,
    runners: Sequence[RunnerReports],
    *,
    cache: WatchCache | None,
    timeout: float,  # noqa: ASYNC109 (the caller's budget, reported as timed_out)
    on_progress: Any = None,
) -> WaitResult:
    """Wait until every object of the runners' last syncs is Current, one is Failed, or
    `timeout` passes; the verdicts go into each runner's `status.health`."""
    from gitkrm.health import HealthChecks, wait_for

    result = await wait_for(
        store,
        [ref for runner in runners for ref in runner.applied],
        timeout=timeout,
        on_progress=on_progress,
        cache=cache,
        ttl_jobs=frozenset().union(*(r.ttl_jobs for r in runners)),
        checks=HealthChecks.merged(r.config.health_checks for r in runners),
    )
    for runner in runners:
        await runner.record_health(result.results)
    return result
