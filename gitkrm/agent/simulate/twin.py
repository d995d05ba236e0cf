"""The twin: a throwaway copy of the embedded store with the bundled controllers running
on it in simulated time, to which revisions are applied to predict what a sync would
lead to.

The twin is a copy made with SQLite's online backup through a read-only connection
(`gitkrm.store.sqlite.backup`): the live store is never written, and an agent may be running
on it. The revisions are applied by the same `SyncEngine` the agent runs, so the store's
admission (schemas, CRD CEL rules, ValidatingAdmissionPolicies) judges every write, and
what it denies is collected, not fatal. Several sources (a tree, several `--source`) are
applied one after the other to the same twin, as they would run together on the target.

Time on the twin is a `VirtualClock` the controllers and the store read and set their
timers on (`drive`): it stands still while there is work and jumps to the next timer when
there is none, so the window `--for` is simulated time and a 15-minute window takes the
wall time of the work it brings. Waits the manifests set (minReadySeconds,
progressDeadlineSeconds, activeDeadlineSeconds, CronJob schedules) run their course within
the window; what they have not decided by its end is reported as it stands. A wall-time
limit (`wall_limit`) bounds a twin that never goes quiet.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Final

from gitkrm.cache import WatchCache
from gitkrm.controllers import ControllerManager, ControllerOptions
from gitkrm.errors import GitkrmError
from gitkrm.health import health_of
from gitkrm.krm import GVK, Obj, ObjectRef, ResourceKey, masking
from gitkrm.krm.clock import VirtualClock, now_of
from gitkrm.source.snapshot import Snapshot
from gitkrm.store import Store
from gitkrm.store.sqlite import SqliteStore
from gitkrm.store.sqlite.backup import copy_store
from gitkrm.sync import live
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.parsecache import ParseCache
from gitkrm.sync.pool import gc_paused
from gitkrm.sync.results import Action, SyncResult

from . import verdict
from .drive import Driver, Outcome
from .verdict import Denial, HookFailure, ObjectVerdict, Simulation, Stage

DEFAULT_BUDGET: Final = 60.0  # simulated seconds
WALL_LIMIT: Final = 300.0  # wall seconds a twin may run at most, whatever the window
TWIN_PREFIX: Final = "gitkrm-twin-"

SIMULATION_CONTROLLERS: Final = ControllerOptions(
    lease_interval=1e9,  # no heartbeat writes while the twin runs
    resync_period=0.0,
    # No Events: their batched writes come in wall time, and the verdict does not read them.
    record_events=False,
    event_ttl=0.0,
)


@dataclass(frozen=True, slots=True)
class SimSource:
    """One source to apply to the twin: how it syncs and the revision (as `plan` read it)."""

    options: SyncOptions
    snapshot: Snapshot
    parse_cache: ParseCache | None = None
    settled: bool = False  # the live store holds what a settled sync of it left (lastsync)


async def simulate(
    *,
    live_store: Path | None,
    sources: Sequence[SimSource],
    budget: float = DEFAULT_BUDGET,
    controllers: ControllerOptions = SIMULATION_CONTROLLERS,
    workdir: Path | None = None,
    wall_limit: float = WALL_LIMIT,
) -> Simulation:
    """Apply `sources` together to a twin of the store file `live_store` (an empty store
    when None or absent) and predict the outcome after `budget` simulated seconds."""
    async with open_twin(
        live_store=live_store,
        budget=budget,
        controllers=controllers,
        workdir=workdir,
        wall_limit=wall_limit,
    ) as twin:
        for src in sources:
            await twin.apply(src)
        return await twin.finish()


@contextlib.asynccontextmanager
async def open_twin(
    *,
    live_store: Path | None,
    budget: float = DEFAULT_BUDGET,
    controllers: ControllerOptions = SIMULATION_CONTROLLERS,
    workdir: Path | None = None,
    wall_limit: float = WALL_LIMIT,
    clock_start: float | None = None,
) -> AsyncIterator[Twin]:
    """A twin of `live_store` with its controllers started, in a temporary directory (under
    `workdir`, else the system's) removed on leaving; its simulated time starts at
    `clock_start` (seconds since the epoch; default now)."""
    start = time.perf_counter()
    # The cyclic GC paused for the twin's life: its controllers' caches hold every object
    # of the store decoded (acyclic), which each full collection would scan again (half
    # the CPU of the controllers' first pass on W10k); the twin lives seconds.
    with gc_paused(), tempfile.TemporaryDirectory(prefix=TWIN_PREFIX, dir=workdir) as tmp:
        path = Path(tmp) / "store.db"
        if live_store is not None:
            await asyncio.to_thread(_seed, live_store, path)
        clock = VirtualClock(clock_start)
        store = SqliteStore.open(str(path), clock=clock)
        cache = WatchCache(store)
        manager = ControllerManager(store=store, options=controllers, cache=cache, clock=clock)
        twin = Twin(
            store=store,
            cache=cache,
            manager=manager,
            clock=clock,
            budget=budget,
            started=start,
            wall_deadline=start + wall_limit,
        )
        try:
            await manager.start()
            # The live state as the controllers listed it: their workers have not run yet.
            twin.before = verdict.ready_endpoints(
                await _all(store, cache, verdict.SERVICE), await _all(store, cache, verdict.POD)
            )
            yield twin
        finally:
            for a in twin.applied:
                await a.engine.close()
            await manager.stop()
            await cache.stop()
            await store.close()


def _seed(live_store: Path, twin: Path) -> None:
    """The twin starts as a copy of the live store (empty when there is none yet)."""
    if live_store.exists():
        copy_store(live_store, twin)


@dataclass
class _Applied:
    source: SimSource
    engine: SyncEngine
    result: SyncResult | None


_WAITING: Final = ("waiting for ",)  # the sync's progress phases that wait on health


@dataclass
class Twin:
    """A twin with its controllers running: `apply` each source, then `finish` once."""

    store: Store
    cache: WatchCache
    manager: ControllerManager
    clock: VirtualClock
    budget: float
    started: float  # perf_counter when the copy began
    wall_deadline: float
    before: dict[ResourceKey, int] = field(default_factory=dict)
    applied: list[_Applied] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.start = self.clock.time()  # the window opens with the twin
        self.driver = Driver(
            clock=self.clock,
            store=self.store,
            manager=self.manager,
            end=self.start + self.budget,
            wall_deadline=self.wall_deadline,
        )

    def _wall_left(self) -> float:
        return max(0.001, self.wall_deadline - time.perf_counter())

    async def apply(self, src: SimSource) -> None:
        """Sync `src` onto the twin as the agent would (waves and hooks: simulated time
        passes while it waits on their health, not while it renders or writes)."""
        name = src.options.source_name
        engine = SyncEngine(
            store=self.store,
            options=replace(src.options, health_timeout=self._wall_left()),
            parse_cache=src.parse_cache,
            cache=self.cache,
            track_drift=False,
        )
        done = _Applied(src, engine, None)
        self.applied.append(done)
        waiting = False

        def progress(phase: str, _done: int | None, _total: int | None) -> None:
            nonlocal waiting
            waiting = phase.startswith(_WAITING) or phase.endswith(" hooks")

        task = asyncio.ensure_future(
            engine.sync(src.snapshot, run_hooks=True, progress=progress, settled=src.settled)
        )
        outcome = await self.driver.run(task=task, may_advance=lambda: waiting)
        if outcome is Outcome.DONE:
            done.result = task.result()
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, GitkrmError):
            await task
        why = "window" if outcome is Outcome.WINDOW else "wall-time limit"
        self.errors.append(f"source {name}: its sync did not finish within the {why}")

    async def finish(self) -> Simulation:
        """Run the controllers until the window ends or nothing more would happen in it,
        and read the verdict."""
        settled = False
        if not self.errors:
            settled = await self.driver.run() is Outcome.SETTLED
        simulated = self.clock.time() - self.start
        after = self.driver.last_change - self.start
        found = await _judge(
            self.store,
            self.cache,
            self.applied,
            self.before,
            now=now_of(self.clock),
            settled=settled,
            errors=self.errors,
        )
        return replace(
            found,
            elapsed=round(time.perf_counter() - self.started, 3),
            budget=self.budget,
            simulated=round(simulated, 3),
            settled_after=round(after, 3) if settled else None,
            sources=tuple(a.source.options.source_name for a in self.applied),
        )


async def _all(store: Store, cache: WatchCache, gvk: GVK) -> list[Obj]:
    """Every object of a kind: from the controllers' cache (decoded already), else the
    store."""
    informer = cache.find(gvk.group, gvk.kind)
    if informer is not None and informer.trusted:
        return informer.items()
    return await live.list_all(store, gvk)


async def _read(
    store: Store, cache: WatchCache, wanted: dict[ObjectRef, GVK]
) -> dict[ObjectRef, Obj | None]:
    """The objects `wanted` names, from the controllers' cache where it holds their kind."""
    out: dict[ObjectRef, Obj | None] = {}
    rest: dict[ObjectRef, GVK] = {}
    for ref, gvk in wanted.items():
        informer = cache.find(ref.group, ref.kind)
        if informer is not None and informer.trusted:
            out[ref] = informer.get(ref.namespace, ref.name)
        else:
            rest[ref] = gvk
    if rest:
        out.update(await live.read(store, rest))
    return out


async def _judge(
    store: Store,
    cache: WatchCache,
    applied: Sequence[_Applied],
    before: dict[ResourceKey, int],
    *,
    now: datetime,
    settled: bool,
    errors: list[str],
) -> Simulation:
    objects: list[ObjectVerdict] = []
    hooks: list[HookFailure] = []
    denials: list[Denial] = []
    created: set[ResourceKey] = set()
    for a in applied:
        name = a.source.options.source_name
        result = a.result
        if result is None:
            continue
        hooks.extend(
            HookFailure(name, h.phase.value, h.ref, h.state.value, masking.mask(h.message))
            for h in result.hooks
            if not h.ok
        )
        if result.errors and not result.objects and not result.hooks:
            # refused whole before any write: what admission (or a guard) said
            denials.extend(
                Denial(Stage.REVISION, masking.mask(e), None, name) for e in result.errors
            )
            continue
        errors.extend(f"source {name}: {masking.mask(e)}" for e in result.errors)
        wanted = {o.ref: _gvk(a.engine, o.ref) for o in result.objects}
        found = await _read(store, cache, wanted)
        ttl = a.engine.jobs_with_ttl()
        checks = a.source.options.health_checks
        for o in result.objects:
            if o.action is Action.FAILED:
                denials.append(Denial(Stage.APPLY, masking.mask(o.message), o.ref, name))
            if o.action is Action.CREATED and o.ref.kind == "Service" and not o.ref.group:
                created.add(o.ref.key)
            h = health_of(found.get(o.ref), now=now, deletes_itself=o.ref.key in ttl, checks=checks)
            objects.append(
                ObjectVerdict(
                    name, o.ref, o.action.value, h.status, h.reason, masking.mask(h.message)
                )
            )
    pods = await _all(store, cache, verdict.POD)
    replica_sets = await _all(store, cache, verdict.REPLICA_SET)
    after = verdict.ready_endpoints(await _all(store, cache, verdict.SERVICE), pods)
    denials.extend(
        replace(d, message=masking.mask(d.message))
        for d in verdict.controller_denials(replica_sets)
    )
    return Simulation(
        elapsed=0.0,
        budget=0.0,
        settled=settled,
        objects=tuple(objects),
        unschedulable=tuple(verdict.unschedulable(pods, replica_sets)),
        failing=tuple(verdict.failing(pods, replica_sets, now)),
        no_endpoints=tuple(verdict.without_endpoints(before, after, created)),
        hooks=tuple(hooks),
        denials=tuple(denials),
        errors=tuple(errors),
    )


def _gvk(engine: SyncEngine, ref: ObjectRef) -> GVK:
    if ref.version:
        return GVK(group=ref.group, version=ref.version, kind=ref.kind)
    try:
        return engine.read_gvk(ref)
    except GitkrmError:
        return GVK(group=ref.group, version="", kind=ref.kind)
