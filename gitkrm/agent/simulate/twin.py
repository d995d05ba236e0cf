"""`simulate`: apply revisions to a throwaway twin of the embedded store and run the
bundled controllers on it, to predict what a sync would lead to.

The twin is a copy made with SQLite's online backup through a read-only connection
(`gitkrm.store.sqlite.backup`): the live store is never written, and an agent may be running
on it. The revisions are applied by the same `SyncEngine` the agent runs, so the store's
admission (schemas, CRD CEL rules, ValidatingAdmissionPolicies) judges every write, and
what it denies is collected, not fatal. Then the controllers run until the twin stops
changing (no work queued and no write for `QUIET` seconds) or the budget ends.

The controllers read the wall clock (`time.time()` in their timers and timestamps, as
kube-controller-manager does), so the budget is wall time; the simulation's controller
options shorten the simulator's own delays (a pod starts in 10 ms, not 500 ms) so that a
rollout settles in well under a second of it. Waits the manifests set (minReadySeconds,
progressDeadlineSeconds) stay real: what is still waiting when the twin settles is reported
as InProgress with its reason.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from gitkrm.cache import WatchCache
from gitkrm.controllers import ControllerManager, ControllerOptions
from gitkrm.errors import GitkrmError
from gitkrm.health import health_of
from gitkrm.krm import GVK, Obj, ObjectRef, ResourceKey, masking
from gitkrm.source.snapshot import Snapshot
from gitkrm.store import Store, open_store
from gitkrm.store.sqlite.backup import copy_store
from gitkrm.sync import live
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.parsecache import ParseCache
from gitkrm.sync.results import Action, SyncResult

from . import verdict
from .verdict import Denial, HookFailure, ObjectVerdict, Simulation, Stage

DEFAULT_BUDGET: Final = 60.0
QUIET: Final = 0.3  # seconds without a write or queued work: the twin has settled
POLL: Final = 0.05
TWIN_PREFIX: Final = "gitkrm-twin-"

SIMULATION_CONTROLLERS: Final = ControllerOptions(
    pod_start_delay=0.01,
    pod_run_duration=0.05,
    endpoint_batch_period=0.05,
    lease_interval=3600.0,  # no heartbeat writes while the twin runs
    resync_period=0.0,
)


@dataclass(frozen=True, slots=True)
class SimSource:
    """One source to apply to the twin: how it syncs and the revision (as `plan` read it)."""

    options: SyncOptions
    snapshot: Snapshot
    parse_cache: ParseCache | None = None


async def simulate(
    *,
    live_store: Path | None,
    sources: Sequence[SimSource],
    budget: float = DEFAULT_BUDGET,
    controllers: ControllerOptions = SIMULATION_CONTROLLERS,
    workdir: Path | None = None,
) -> Simulation:
    """Apply `sources` to a twin of the store file `live_store` (an empty store when None
    or absent) and predict the outcome within `budget` seconds. The twin lives in a
    temporary directory (under `workdir`, else the system's) removed before returning."""
    start = time.perf_counter()
    deadline = start + budget
    with tempfile.TemporaryDirectory(prefix=TWIN_PREFIX, dir=workdir) as tmp:
        path = Path(tmp) / "store.db"
        if live_store is not None:
            await asyncio.to_thread(_seed, live_store, path)
        store = await open_store("sqlite:///" + str(path))
        try:
            found = await _run(store, sources, deadline, controllers)
        finally:
            await store.close()
    return replace(found, elapsed=round(time.perf_counter() - start, 3), budget=budget)


def _seed(live_store: Path, twin: Path) -> None:
    """The twin starts as a copy of the live store (empty when there is none yet)."""
    if live_store.exists():
        copy_store(live_store, twin)


@dataclass
class _Applied:
    source: SimSource
    engine: SyncEngine
    result: SyncResult | None


async def _run(
    store: Store, sources: Sequence[SimSource], deadline: float, options: ControllerOptions
) -> Simulation:
    cache = WatchCache(store)
    manager = ControllerManager(store=store, options=options, cache=cache)
    applied: list[_Applied] = []
    errors: list[str] = []
    try:
        await manager.start()
        # The live state as the controllers listed it: their workers have not run yet.
        before = verdict.ready_endpoints(
            await _all(store, cache, verdict.SERVICE), await _all(store, cache, verdict.POD)
        )
        for src in sources:
            engine = SyncEngine(
                store=store,
                options=replace(src.options, health_timeout=max(_left(deadline), 0.001)),
                parse_cache=src.parse_cache,
                cache=cache,
                track_drift=False,
            )
            done = _Applied(src, engine, None)
            applied.append(done)
            try:
                done.result = await asyncio.wait_for(
                    engine.sync(src.snapshot, run_hooks=True), timeout=_left(deadline)
                )
            except TimeoutError:
                errors.append(
                    f"source {src.options.source_name}: its sync did not finish within the budget"
                )
        settled = not errors and await _settle(store, manager, deadline)
        return await _judge(store, cache, applied, before, settled=settled, errors=errors)
    finally:
        for a in applied:
            await a.engine.close()
        await manager.stop()
        await cache.stop()


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.perf_counter())


async def _settle(store: Store, manager: ControllerManager, deadline: float) -> bool:
    """Wait until nothing is queued and the store's revision stays put for QUIET seconds
    (True), or the deadline passes (False)."""
    last = ""
    quiet_since = time.perf_counter()
    while True:
        now = time.perf_counter()
        if now >= deadline:
            return False
        rv = await live.current_revision(store)
        if rv != last or not manager.idle():
            last, quiet_since = rv, now
        elif now - quiet_since >= QUIET:
            return True
        await asyncio.sleep(POLL)


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
    settled: bool,
    errors: list[str],
) -> Simulation:
    now = datetime.now(UTC)
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
