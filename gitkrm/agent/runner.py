"""One source inside the agent: fetch, sync (or check drift), record the status, log the line.

A runner never raises for something that went wrong with the source or the sync: a bad
revision, an unreachable remote or a refused object becomes a failed `Outcome`, a log
line and a GitSource status, and the runner is ready for the next attempt. The previous
state stays in place because the engine applies a revision all or nothing.

With `skip_unchanged` (`run --once` without `--wait`), a source whose revision and store
did not change since its last settled sync is not synced again (see `lastsync`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gitkrm.cache import WatchCache
from gitkrm.errors import GitkrmError
from gitkrm.krm import GVK, Obj
from gitkrm.source import Source
from gitkrm.source.snapshot import Snapshot
from gitkrm.store import Store
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.parsecache import ParseCache
from gitkrm.sync.results import SyncResult, make_result

from . import hookstate, lastsync
from . import logging as agentlog
from . import status as st
from .config import ApplyMode, SourceConfig, sync_options
from .logging import log_sync, sync_fields
from .outcomes import (
    REVISION_ERRORS,
    changed,
    outcome_of,
    outcome_of_error,
    outcome_of_plan,
    with_timing,
)
from .progress import Progress
from .runner_reports import RunnerReports
from .scheduler import Trigger
from .sources import open_source
from .state import hooks_file, last_sync_file, parse_cache_file

if TYPE_CHECKING:
    from gitkrm.report import HealthFollower, Reporter
    from gitkrm.sync.drift import Seen
    from gitkrm.sync.engine import SyncEngine

log = logging.getLogger("gitkrm.agent")

CANCEL_POLL = 10.0
"""At most this many seconds between polls of the source while a sync runs (half the
interval when that is shorter): a new revision cancels a wait on health."""


def _components(config: SourceConfig) -> bool:
    """Whether the source's snapshots need the whole repository tree (an overlay's
    components may lie outside the path: `open_source`)."""
    return config.overlay is not None and config.overlay.outside_path


def _where(config: SourceConfig) -> tuple[object, ...]:
    """What the source's files come from: a change to it opens a new source."""
    return (config.url, config.ref, config.path, config.auth, config.ca_file, config.verify,
            config.timeout, config.ignore, _components(config))  # fmt: skip


class SourceRunner(RunnerReports):
    """Syncs one source into the store; its status, health and reports: `RunnerReports`."""

    def __init__(
        self,
        *,
        store: Store,
        config: SourceConfig,
        agent_name: str,
        apply_mode: ApplyMode,
        git_cache: Path,
        live: Obj | None = None,
        reporter: Reporter | None = None,
        follower: HealthFollower | None = None,
        state_dir: Path | None = None,
        skip_unchanged: bool = False,
        cache: WatchCache | None = None,
        track_drift: bool = True,
        deadline: float | None = None,
    ) -> None:
        super().__init__(
            store=store,
            config=config,
            agent_name=agent_name,
            live=live,
            reporter=reporter,
            follower=follower,
        )
        self.track_drift = track_drift
        self.deadline = deadline
        """When the run's waits end (`run --once --wait --timeout`; `SyncOptions.deadline`)."""
        """Whether drift checks follow the syncs (not in `run --once`)."""
        self.cache = cache
        """The store's shared watch cache (drift detection follows the source's scope)."""
        self.state_dir = state_dir
        """Where parsed files and the record of the last sync are kept (None: nowhere)."""
        self.skip_unchanged = skip_unchanged
        self.apply_mode = apply_mode
        self.git_cache = git_cache
        self.source: Source = open_source(config, git_cache=git_cache)
        self._sync_engine: SyncEngine | None = None  # made at the first sync (`engine`)
        self._hooked_restored = False
        self._engine_store = store  # the store the engine syncs into, as given here
        self.spec_error: str | None = None
        """Why the GitSource's current spec can't be used (the source is stalled until fixed)."""
        self.before_wait: Callable[[], Awaitable[None]] | None = None
        """Called before a sync first waits on health (the embedded target's controllers)."""
        self.parent = ""
        """A child source of a source tree: the source that declares it."""
        self.before_pass: Callable[[], None] | None = None
        """Called before a pass that fetches and syncs (not before one with nothing to do)."""

    @property
    def engine(self) -> SyncEngine:
        """The source's sync engine, made when first used: a pass with nothing to do
        (`skip_unchanged`) imports and builds none."""
        if self._sync_engine is None:
            self._sync_engine = self._engine(self.config)
            self._sync_engine.before_wait = self.before_wait
            hooks = self.status.get("hooks")
            if isinstance(hooks, dict) and isinstance(hooks.get("revision"), str):
                self._sync_engine.hooked_revision = hooks["revision"]  # ran before a restart
        return self._sync_engine

    def settled_objects(self) -> tuple[Mapping[str, Seen], tuple[GVK, ...]] | None:
        """What this runner's last sync left, when it settled (see `SyncEngine`)."""
        if self._sync_engine is None:
            return None
        return self._sync_engine.settled_objects()

    def _engine(self, config: SourceConfig) -> SyncEngine:
        from gitkrm.sync.engine import SyncEngine

        cache = None
        if self.state_dir is not None:
            cache = ParseCache(parse_cache_file(self.state_dir, config.name))
        return SyncEngine(
            store=self._engine_store,
            options=self._options(config),
            parse_cache=cache,
            cache=self.cache,
            track_drift=self.track_drift,
        )

    def _window_shut(self, requested: bool) -> bool:
        """Whether the source's sync windows forbid a sync now (it compares instead)."""
        windows = self.config.sync_windows
        if not windows:
            return False
        from gitkrm.sync.syncwindows import can_sync

        if can_sync(windows, datetime.now(UTC), manual=requested):
            return False
        log.info(
            "sync prevented by sync window: compared, not applied",
            extra={"fields": {"source": self.name}},
        )
        return True

    def _fingerprint(self) -> str | None:
        if self.config.sync_windows:
            return None  # what a pass does depends on the time: never skipped as unchanged
        return lastsync.fingerprint(
            self.config, agent_name=self.agent_name, apply_mode=self.apply_mode
        )

    def _options(self, config: SourceConfig) -> SyncOptions:
        options = sync_options(config, agent_name=self.agent_name, apply_mode=self.apply_mode)
        return options if self.deadline is None else replace(options, deadline=self.deadline)

    async def reconfigure(self, config: SourceConfig, *, generation: int) -> None:
        """Take a new spec (an edit of the GitSource): a new source when where-from changed,
        a new engine for the rest; the next sync is a full one."""
        old = self.config
        self.config = config
        self.generation = generation
        if _where(old) != _where(config):
            await self.source.close()
            self.source = open_source(config, git_cache=self.git_cache)
        if self._sync_engine is not None:
            await self._sync_engine.close()
        self._sync_engine = None
        self.last_sync = None
        self.writer = st.StatusWriter(
            self.store, desired=config.to_object(agent_name=self.agent_name)
        )
        self.last_ok = False
        if self.reporter is not None:
            self.reporter.register(self.name, self.source, parent=self.parent)

    async def reconcile(self, triggers: frozenset[Trigger]) -> st.Outcome | None:
        """One pass: fetch; a full sync when the revision moved (or was asked for), else a
        drift check; then status and log. None when the source is suspended."""
        if self.config.suspend:
            # Said at info level when someone asked (a change, a request), not every tick.
            quiet = triggers <= {Trigger.INTERVAL}
            log.log(
                logging.DEBUG if quiet else logging.INFO,
                "suspended: not synced",
                extra={"fields": {"source": self.name, "trigger": ",".join(sorted(triggers))}},
            )
            return None
        trigger = ",".join(sorted(triggers)) or "once"
        asked = bool(triggers & {Trigger.REQUEST, Trigger.START})
        requested = self.requested_at if asked else None
        if self.spec_error is not None:
            outcome = st.Outcome(
                revision=None,
                succeeded=False,
                reason=st.Reason.INVALID_SPEC,
                errors=(self.spec_error,),
                stalled=True,
            )
            if self.last_outcome != outcome:
                await self._finish(outcome, trigger=trigger, requested=requested)
            return outcome
        if self.skip_unchanged:
            unchanged = await self._unchanged(trigger)
            if unchanged is not None:
                return unchanged
        if self.before_pass is not None:
            self.before_pass()
        with Progress(agentlog.progress_stream, label=f"{self.name}: ") as progress:
            outcome, quiet = await self._pass(triggers, progress)
        self._settled(outcome)
        await self._finish(outcome, trigger=trigger, requested=requested, quiet=quiet)
        return outcome

    async def _unchanged(self, trigger: str) -> st.Outcome | None:
        """The last sync's outcome again when neither the revision nor the store changed
        since (nothing rendered, planned, written or reported); None: sync."""
        if self.state_dir is None:
            return None
        started = time.perf_counter()
        try:
            record = await lastsync.unchanged(
                last_sync_file(self.state_dir, self.name),
                store=self.store,
                source=self.source,
                fingerprint=self._fingerprint(),
            )
        except GitkrmError:
            return None  # the sync says what is wrong
        if record is None:
            return None
        ms = (time.perf_counter() - started) * 1000
        outcome = record.outcome(git_ms=ms)
        self.last_sync = record
        self.synced_revision = record.revision
        self.last_ok = True
        self.last_outcome = outcome
        self._log_pass(outcome, trigger=trigger)
        return outcome

    def _settled(self, outcome: st.Outcome) -> None:
        """Keep the record of a sync that settled (see `lastsync`), or drop the last one."""
        self.last_sync = lastsync.of_sync(
            self.name,
            outcome,
            fingerprint=self._fingerprint(),
            synced_revision=self.engine.synced_revision,
            settled_at=self.engine.settled_at,
            settings=lastsync.fingerprint(
                self.config, agent_name=self.agent_name, apply_mode=self.apply_mode, any_ref=True
            ),
        )

    async def _pass(
        self, triggers: frozenset[Trigger], progress: Progress
    ) -> tuple[st.Outcome, bool]:
        """Fetch, then sync or check drift: the outcome, and whether it is quiet (a drift
        check that found nothing: no status write, a debug log line)."""
        progress.phase("fetching")
        started = time.perf_counter()
        try:
            snap = await self.source.snapshot()
        except GitkrmError as e:
            git_ms = (time.perf_counter() - started) * 1000
            if isinstance(e, REVISION_ERRORS):
                await self._report(make_result(revision=e.revision, errors=[e.message]))
            return with_timing(outcome_of_error(e, revision=None), git=git_ms), False
        git_ms = (time.perf_counter() - started) * 1000
        full = (
            snap.revision != self.synced_revision
            or not self.last_ok
            or bool(triggers & {Trigger.REQUEST, Trigger.SPEC, Trigger.START})
            or await self.engine.inputs_changed()  # substituteFrom values, decryption keys
        )
        requested = Trigger.REQUEST in triggers  # a request syncs
        manual = (not self.config.automated and not requested) or self._window_shut(requested)
        if manual or (not full and not self.config.self_heal):
            progress.phase("comparing")
            compared = await self._compare(snap, git_ms)
            last = self.last_outcome
            same = (  # a comparison that found what the last one did: a debug line
                last is not None
                and (last.revision, last.out_of_sync) == (compared.revision, compared.out_of_sync)
                and not triggers & {Trigger.REQUEST, Trigger.SPEC, Trigger.START}
            )
            return compared, same
        try:
            if full:
                if self.reporter is not None:
                    self.reporter.prepare(self.name)  # the remote's reports, meanwhile
                await self._progressing(snap.revision)
                progress.phase("syncing")
                result = await self._sync(snap, triggers, progress)
            else:
                progress.phase("drift")
                result = await self.engine.check_drift(progress=progress.phase)
        except GitkrmError as e:
            if isinstance(e, REVISION_ERRORS):
                await self._report(make_result(revision=e.revision, errors=[e.message]))
            return with_timing(outcome_of_error(e, revision=snap.revision), git=git_ms), False
        outcome = outcome_of(result)
        outcome = with_timing(outcome, git=git_ms + outcome.timings_ms.git)
        quiet = not full and outcome.succeeded and not changed(outcome.counts)
        await self._report(result, quiet=quiet)
        return outcome, quiet

    async def _compare(self, snap: Snapshot, git_ms: float) -> st.Outcome:
        """Plan the revision without writing (`automated` False, or drift not healed): what
        differs, and the health of the objects there are."""
        try:
            plan = await self.engine.plan(snap)
        except GitkrmError as e:
            return with_timing(outcome_of_error(e, revision=snap.revision), git=git_ms)
        outcome = outcome_of_plan(plan, revision=snap.revision)
        if outcome.succeeded:
            refs = tuple(s.ref for s in plan.steps if s.desired is not None and s.live is not None)
            self.health = await self._read_health(refs)
            self.applied = refs
        return with_timing(outcome, git=git_ms)

    async def _sync(
        self, snap: Snapshot, triggers: frozenset[Trigger], progress: Progress
    ) -> SyncResult:
        """A full sync, its hooks run again on a request; while it runs the source is
        polled, and a new revision cancels a wait on health and is synced at once."""
        run_hooks = Trigger.REQUEST in triggers
        await self._restore_hooked()
        while True:
            cancel = asyncio.Event()
            watch = asyncio.create_task(self._watch_revision(snap.revision, cancel))
            try:
                result = await self.engine.sync(
                    snap, progress=progress.phase, run_hooks=run_hooks, cancel=cancel
                )
            finally:
                watch.cancel()
                await asyncio.gather(watch, return_exceptions=True)
            if not cancel.is_set():
                await self._record_hooked(result)
                return result
            fields = sync_fields(
                source=self.name,
                revision=result.revision,
                result="Failed",
                counts=result.counts,
                timings_ms=result.timings_ms,
                trigger="cancelled",
            )
            log_sync(fields, errors=tuple(result.problems()))
            await self._report(result)
            snap = await self.source.snapshot()
            await self._progressing(snap.revision)

    async def _restore_hooked(self) -> None:
        """Before the first sync of a process: the revision whose hooks ran, from the state
        dir when the status did not say (a target without GitSource objects)."""
        if self._hooked_restored or self.state_dir is None:
            return
        self._hooked_restored = True
        if self.engine.hooked_revision is None:
            with contextlib.suppress(GitkrmError):
                path = hooks_file(self.state_dir, self.name)
                self.engine.hooked_revision = await hookstate.load(path, store=self.store)

    async def _record_hooked(self, result: SyncResult) -> None:
        if result.hooks and self.state_dir is not None and result.revision:
            with contextlib.suppress(GitkrmError):
                path = hooks_file(self.state_dir, self.name)
                await hookstate.save(path, result.revision, store=self.store)

    async def _watch_revision(self, revision: str, cancel: asyncio.Event) -> None:
        """Set `cancel` when the source moves past `revision` (polled while a sync runs:
        a quick sync is over before the first poll)."""
        every = max(0.5, min(self.config.interval / 2, CANCEL_POLL))
        while True:
            await asyncio.sleep(every)
            try:
                now = await self.source.poll()
            except GitkrmError:
                continue
            if now is not None and now != revision:
                cancel.set()
                return

    async def close_engine(self) -> None:
        """Stop the sync engine's drift informers (nothing syncs any more)."""
        engine, self._sync_engine = self._sync_engine, None
        if engine is not None:
            await engine.close()

    async def close(self) -> None:
        await self.stop_writes()  # a removed source's GitSource is not written back
        await self.close_engine()
        await self.source.close()
