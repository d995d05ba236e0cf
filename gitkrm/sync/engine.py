"""The sync engine: keeps a store equal to what one source's revisions say, safely.

`sync(snapshot)`: render and validate the revision (all or nothing), read the inventory
and the live objects that may have changed, plan, write the inventory as the union of
old and new, apply in order, prune, narrow the inventory. `check_drift()` does the same
for the last synced revision: only objects changed since the last apply are read and
diffed, and a quiet interval (same revision, no drift, inventory untouched) costs a few
reads. `plan(snapshot)` is the dry run behind `gitkrm diff`.

After a sync that settled everything with nobody else writing meanwhile, `settled_at` is
the store's revision after the sync's own writes: while the store stays at it, the store
still holds exactly what that revision says (the agent's `run --once` trusts it; see
`gitkrm.agent.lastsync`). A `ParseCache` keeps parsed files on disk across processes.

One engine per source and store; syncs of one engine never overlap. Call `close()` to
stop its drift watches.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Final

from gitkrm.cache import WatchCache
from gitkrm.errors import GitkrmError, NotFound
from gitkrm.krm import GVK, GroupKind, ObjectRef
from gitkrm.patch import PatchMeta
from gitkrm.patch.fieldmanager import SchemaType
from gitkrm.schema import Registry, patch_meta_for, ssa_type_for
from gitkrm.source.snapshot import Snapshot
from gitkrm.store import Store
from gitkrm.sync import inventory, keys, live
from gitkrm.sync.apply import Applied, Applier
from gitkrm.sync.desired import Desired
from gitkrm.sync.diff import diff_text
from gitkrm.sync.drift import DriftTracker
from gitkrm.sync.inventory import Inventory
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.parse import ParseContext
from gitkrm.sync.parsecache import ParseCache
from gitkrm.sync.plan import Plan, Step, make_plan, narrowed, prune_candidates
from gitkrm.sync.pool import gc_paused
from gitkrm.sync.progress import ProgressFn, no_progress
from gitkrm.sync.render import Renderer, RenderResult
from gitkrm.sync.results import Action, ObjectResult, SyncResult, make_result

_UNSETTLED: Final = frozenset({Action.FAILED, Action.REFUSED, Action.SKIPPED})


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def contiguous(since: str, after: str, ours: set[int]) -> bool:
    """Whether every revision in (since, after] is one of our writes (integer revisions,
    as the embedded store and etcd count them): then nobody else wrote meanwhile."""
    try:
        lo, hi = int(since), int(after)
    except ValueError:
        return False
    return hi - lo <= len(ours) and all(rv in ours for rv in range(lo + 1, hi + 1))


class _Refused(Exception):
    """A revision that can't be applied at all (the reasons are its errors)."""

    def __init__(self, errors: Iterable[str], timings: dict[str, float]) -> None:
        super().__init__("revision refused")
        self.errors = tuple(errors)
        self.timings = timings


class SyncEngine:
    """Syncs one source into one store (see the module docstring)."""

    def __init__(
        self,
        *,
        store: Store,
        options: SyncOptions,
        parse_cache: ParseCache | None = None,
        cache: WatchCache | None = None,
    ) -> None:
        """`cache`: the store's shared watch cache (drift detection reads the source's
        scope of it); a private one otherwise."""
        self.store = store
        self.options = options
        self._renderer = Renderer(
            context=ParseContext(source=options.source_name, default_namespace=options.namespace),
            disk=parse_cache,
        )
        self._tracker = DriftTracker(store, source=options.source_name, cache=cache)
        self._rendered: RenderResult | None = None
        self._rendered_key: tuple[str, tuple[tuple[str, str], ...]] | None = None
        self._registry: Registry | None = None
        # After a sync: the revision applied, objects to read again next time, whether
        # everything settled (all applied and recorded), the inventory as written, and
        # the "all unchanged" results of the revision (built on first use).
        self._synced: RenderResult | None = None
        self._unsettled: set[str] = set()
        self._settled = False
        self._inventory: Inventory | None = None
        self._unchanged: tuple[ObjectResult, ...] | None = None
        # Unchanged steps of the last plan, and "unchanged" results by object key, reused
        # while their desired object is the same (a quiet object allocates nothing).
        self._reuse_steps: dict[str, Step] = {}
        self._reuse_results: dict[str, tuple[Desired, ObjectResult]] = {}
        self._lock = asyncio.Lock()
        # The store's revision when the sync under way first read it ("": at its plan), and
        # after the last one that settled with only our own writes since (`settled_at`).
        self._started_at = ""
        self._settled_at: str | None = None

    @property
    def synced_revision(self) -> str | None:
        """The revision last applied (the state drift checks restore)."""
        return self._synced.revision if self._synced is not None else None

    @property
    def settled_at(self) -> str | None:
        """The store's revision right after the last sync (or drift check that wrote),
        when it settled every object and every write to the store from its start on was
        its own; None otherwise. The store holds what `synced_revision` says while its
        revision stays here."""
        return self._settled_at

    # -- public API ------------------------------------------------------------------

    async def sync(self, snapshot: Snapshot, *, progress: ProgressFn = no_progress) -> SyncResult:
        """Render, validate, plan and apply one revision; `progress` hears the phase and
        how many writes of how many are done (for a bar on a terminal)."""
        async with self._lock:
            try:
                with gc_paused():
                    progress("rendering", None, None)
                    rendered, timings = await self._render(snapshot)
                    return await self._apply(rendered, timings, progress=progress)
            except _Refused as r:
                self._settled_at = None
                return make_result(
                    revision=snapshot.revision, errors=r.errors, timings_ms=r.timings
                )

    async def check_drift(self, *, progress: ProgressFn = no_progress) -> SyncResult:
        """Re-apply the last synced revision to the objects changed since the last apply
        (a result without objects when nothing was synced yet)."""
        async with self._lock:
            if self._synced is None:
                return make_result(revision="")
            try:
                with gc_paused():
                    self._started_at = ""  # nothing read before the plan
                    return await self._apply(
                        self._synced, {"git": 0.0, "render": 0.0}, progress=progress
                    )
            except _Refused as r:
                return make_result(
                    revision=self._synced.revision, errors=r.errors, timings_ms=r.timings
                )

    async def plan(self, snapshot: Snapshot) -> Plan:
        """What `sync` would do, without writing anything (errors: why it can't)."""
        async with self._lock:
            try:
                with gc_paused():
                    rendered, timings = await self._render(snapshot)
                    inv = await self._read_inventory(rendered, timings)
                    plan, _ = await self._plan(rendered, inv, dry_run=True)
                return plan
            except _Refused as r:
                return Plan(
                    revision=snapshot.revision, steps=(), inventory=frozenset(), errors=r.errors
                )

    def diff_text(self, plan: Plan) -> str:
        """`plan` as a unified YAML diff per object (Secrets redacted)."""
        return diff_text(plan, self._meta)

    async def close(self) -> None:
        """Stop watching for drift."""
        await self._tracker.close()

    # -- rendering and reading -------------------------------------------------------

    async def _render(self, snapshot: Snapshot) -> tuple[RenderResult, dict[str, float]]:
        start = time.perf_counter()
        crds, self._started_at = await live.list_at(self.store, live.CRD)
        crd_key = tuple(
            sorted(
                (str(keys.metadata(c).get("name")), str(keys.metadata(c).get("resourceVersion")))
                for c in crds
            )
        )
        key = (snapshot.revision, crd_key)
        if self._rendered is not None and self._rendered_key == key:
            return self._rendered, {"git": 0.0, "render": _ms(start)}
        listed = await live.list_all(self.store, live.NAMESPACE)
        namespaces = {str(keys.metadata(ns).get("name")) for ns in listed}
        rendered = await self._renderer.render(snapshot, store_crds=crds, namespaces=namespaces)
        timings = {"git": rendered.read_ms, "render": _ms(start) - rendered.read_ms}
        if not rendered.ok:
            raise _Refused((str(p) for p in rendered.problems), timings)
        self._rendered, self._rendered_key = rendered, key
        self._registry = rendered.registry
        return rendered, timings

    async def _read_inventory(self, rendered: RenderResult, timings: dict[str, float]) -> Inventory:
        o = self.options
        inv = await inventory.read(
            self.store, source=o.source_name, inventory_id=o.inventory_id, cache=self._inventory
        )
        if not rendered.objects and inv.entries and not o.allow_empty:
            raise _Refused(
                [
                    f"revision {rendered.revision[:12]} renders no objects while the inventory "
                    f"holds {len(inv.entries)}: refusing to prune everything (allow empty "
                    "revisions for this source to do it)"
                ],
                timings,
            )
        return inv

    def _meta(self, gvk: GVK) -> PatchMeta | None:
        """Strategic-merge metadata of a built-in kind; None for custom resources."""
        reg = self._registry
        if reg is not None and reg.custom_schema(gvk) is not None:
            return None
        try:
            return patch_meta_for(gvk)
        except NotFound:
            return None

    def _typ(self, gvk: GVK) -> SchemaType:
        """The server-side apply type of a kind (a CRD's schema for custom resources)."""
        return ssa_type_for(gvk, registry=self._registry)

    def read_gvk(self, ref: ObjectRef) -> GVK:
        """A version to read an object at (for objects only the inventory names, and for
        the agent's health reads): the served version the last render knew, else none."""
        reg = self._registry
        if reg is not None:
            versions = reg.versions_of(GroupKind(group=ref.group, kind=ref.kind))
            if versions:
                return versions[0].gvk
        return GVK(group=ref.group, version="", kind=ref.kind)

    # -- planning and applying -------------------------------------------------------

    async def _plan(
        self, rendered: RenderResult, inv: Inventory, *, dry_run: bool = False
    ) -> tuple[Plan, str]:
        """The plan, and the store revision its live view was read at."""
        since = await live.current_revision(self.store)
        tracker = self._tracker
        await tracker.settle()
        trusted = tracker.trusted_kinds()
        all_trusted = set(rendered.kinds) <= trusted
        unsettled = self._unsettled
        seen = tracker.seen
        dirty = tracker.dirty
        wanted: dict[ObjectRef, GVK] = {}
        wanted_keys: set[str] = set()
        in_sync: set[str] = set()
        for d in rendered.objects:  # the hot loop of a quiet revision: kept flat
            k = d.key
            s = seen.get(k)
            if (
                s is not None
                and (s.applied is d.applied or s.applied == d.applied)
                and k not in dirty
                and k not in unsettled
                and (all_trusted or (d.ref.group, d.ref.kind) in trusted)
            ):
                in_sync.add(k)
            else:
                wanted[d.ref] = d.gvk
                wanted_keys.add(k)
        desired_keys = rendered.keys
        gone, _ = prune_candidates(inv.entries, desired_keys)
        for ref in gone.values():
            wanted[ref] = self.read_gvk(ref)
        if not dry_run:  # objects read now are clean until their next event
            tracker.dirty.difference_update(wanted_keys)
            # Follow the kinds from now: their informers list while this sync applies
            # (cheap before a first sync writes), so the next check can trust them.
            tracker.watch(gvk for gvk in rendered.kinds.values() if gvk.version)
        live_objects = await live.read(self.store, wanted)
        plan = make_plan(
            revision=rendered.revision,
            desired=rendered.objects,
            inventory=inv.entries,
            live=live_objects,
            options=self.options,
            meta=self._meta,
            typ=self._typ,
            in_sync=in_sync,
            reuse=None if dry_run else self._reuse_steps,
        )
        return plan, since

    async def _quiet(self, rendered: RenderResult, inv: Inventory) -> bool:
        """Nothing to do: the synced revision again, everything settled, no drift, the
        inventory as written, every kind watched."""
        if rendered is not self._synced or not self._settled or inv is not self._inventory:
            return False
        await self._tracker.settle()
        if self._tracker.dirty:
            return False
        return set(rendered.kinds) <= self._tracker.trusted_kinds()

    async def _apply(
        self,
        rendered: RenderResult,
        timings: dict[str, float],
        *,
        progress: ProgressFn = no_progress,
    ) -> SyncResult:
        o = self.options
        start = time.perf_counter()
        inv = await self._read_inventory(rendered, timings)
        if await self._quiet(rendered, inv):
            if self._unchanged is None:
                self._unchanged = tuple(self._unchanged_result(d) for d in rendered.objects)
            timings.update(diff=_ms(start), apply=0.0)
            return make_result(
                revision=rendered.revision, objects=self._unchanged, timings_ms=timings
            )
        progress("planning", None, None)
        plan, since = await self._plan(rendered, inv)
        timings["diff"] = _ms(start)
        start = time.perf_counter()
        ours: set[int] = set()
        union = plan.union
        if union != inv.entries or (not inv.versions and union):
            try:
                if not inv.versions:
                    made = await inventory.ensure_namespace(self.store)
                    if made:
                        ours.add(int(made))
                inv = await inventory.write(
                    self.store,
                    union,
                    current=inv,
                    source=o.source_name,
                    inventory_id=o.inventory_id,
                )
            except GitkrmError as e:
                timings["apply"] = _ms(start)
                raise _Refused([f"writing the inventory failed: {e.message}"], timings) from e
            ours.update(int(v) for v in inv.versions.values() if v.isdigit())
        applier = Applier(
            self.store,
            options=o,
            revision=rendered.revision,
            meta=self._meta,
            typ=self._typ,
            reuse=self._reuse_results,
            progress=progress,
        )
        applied = await applier.apply(plan)
        after = narrowed(plan, applied.actions)
        errors: list[str] = []
        if after != inv.entries:
            try:
                inv = await inventory.write(
                    self.store,
                    after,
                    current=inv,
                    source=o.source_name,
                    inventory_id=o.inventory_id,
                )
                ours.update(int(v) for v in inv.versions.values() if v.isdigit())
            except GitkrmError as e:
                errors.append(f"narrowing the inventory failed (extra entries stay): {e.message}")
                inv = Inventory()  # read again next time
        timings["apply"] = _ms(start)
        await self._remember(rendered, plan, applied, inv, since, ours)
        return make_result(
            revision=rendered.revision, objects=applied.results, errors=errors, timings_ms=timings
        )

    def _unchanged_result(self, d: Desired) -> ObjectResult:
        hit = self._reuse_results.get(d.key)
        if hit is not None and hit[0] is d:
            return hit[1]
        result = ObjectResult(d.ref, Action.UNCHANGED, path=d.path, line=d.line or None)
        self._reuse_results[d.key] = (d, result)
        return result

    async def _write_inventory(self, entries: frozenset[str], current: Inventory) -> Inventory:
        o = self.options
        return await inventory.write(
            self.store, entries, current=current, source=o.source_name, inventory_id=o.inventory_id
        )

    async def _remember(
        self,
        rendered: RenderResult,
        plan: Plan,
        applied: Applied,
        inv: Inventory,
        since: str,
        ours: set[int],
    ) -> None:
        """Record what was seen and written, and watch the owned kinds for drift."""
        tracker = self._tracker
        unsettled: set[str] = set()
        settled = True
        reuse_steps: dict[str, Step] = {}
        reuse_results = self._reuse_results
        for step, result in zip(plan.steps, applied.results, strict=True):
            d = step.desired
            if result.action is Action.UNCHANGED and step.live is None and d is not None:
                reuse_steps[step.key] = step
                reuse_results[step.key] = (d, result)
                continue  # in sync, not read: nothing new to record
            if d is None:
                tracker.forget((step.key,))
                if result.action is Action.FAILED:
                    settled = False  # the prune is tried again next time
                continue
            if result.action in _UNSETTLED:
                unsettled.add(step.key)
                tracker.forget((step.key,))
                settled = False
                continue
            obj = applied.live.get(step.key)
            if obj is not None:
                tracker.record(step.key, obj, d.applied)
                rv = keys.metadata(obj).get("resourceVersion")
                if result.action is not Action.UNCHANGED and isinstance(rv, str) and rv.isdigit():
                    ours.add(int(rv))
            elif step.key not in tracker.seen:
                settled = False
        if len(tracker.seen) > len(inv.entries):
            tracker.forget(list(tracker.seen.keys() - inv.entries))
        self._unsettled = unsettled
        self._reuse_steps = reuse_steps
        if len(reuse_results) > 2 * len(rendered.objects) + 64:
            self._reuse_results = {
                d.key: reuse_results[d.key] for d in rendered.objects if d.key in reuse_results
            }
        self._settled = settled and bool(inv.versions)
        self._inventory = inv if inv.versions else None
        if rendered is not self._synced:
            self._unchanged = None
        self._synced = rendered
        # Watch from the revision the plan read at; after our own writes when nobody
        # else wrote meanwhile (no need to replay thousands of our own events).
        after = await live.current_revision(self.store)
        start = after if contiguous(since, after, ours) else since
        clean = self._settled and contiguous(self._started_at or since, after, ours)
        self._settled_at = after if clean else None
        tracker.watch((gvk for gvk in rendered.kinds.values() if gvk.version), since=start)
