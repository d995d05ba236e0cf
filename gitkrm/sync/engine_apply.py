"""The engine's apply step: one pass of a rendered revision over the store.

The inventory is read (a quiet pass stops there), the plan made and checked against the
prune budget and admission, the inventory written as the union of old and new, the plan
applied in order with health gates between waves, the inventory narrowed; then what the
pass saw and wrote is remembered for the next one (objects in sync, objects that did not
settle, the store revision it settled at) and the owned kinds are watched for drift.
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from gitkrm.errors import GitkrmError
from gitkrm.krm import Obj
from gitkrm.sync import admission, inventory, keys, live
from gitkrm.sync.apply import Applied, Applier, Between
from gitkrm.sync.desired import Desired
from gitkrm.sync.engine_gates import EngineGates
from gitkrm.sync.engine_parts import EngineParts, ms_since
from gitkrm.sync.engine_plan import Planner
from gitkrm.sync.engine_render import RenderStep
from gitkrm.sync.inventory import Inventory
from gitkrm.sync.plan import Plan, Step, narrowed
from gitkrm.sync.progress import ProgressFn, no_progress
from gitkrm.sync.refusal import Refusal
from gitkrm.sync.render import RenderResult
from gitkrm.sync.results import Action, ObjectResult, SyncResult, make_result

_UNSETTLED: Final = frozenset({Action.FAILED, Action.REFUSED, Action.SKIPPED})


class ApplyStep:
    """Applies one engine's passes (see the module docstring)."""

    def __init__(
        self, parts: EngineParts, *, render: RenderStep, planner: Planner, gates: EngineGates
    ) -> None:
        self._parts = parts
        self._render = render
        self._planner = planner
        self._gates = gates
        self.live_after: dict[str, Obj] = {}
        """The live objects the last pass wrote or read, by object key (`take_live`)."""

    async def apply(
        self,
        rendered: RenderResult,
        timings: dict[str, float],
        *,
        progress: ProgressFn = no_progress,
        cancel: asyncio.Event | None = None,
        between: Between | None = None,
        settled: bool = False,
    ) -> SyncResult | Refusal:
        """One pass of `rendered` (`between`: run between waves, as Argo CD's Sync hooks)."""
        parts, planner = self._parts, self._planner
        memo = parts.memo
        start = time.perf_counter()
        inv = await planner.read_inventory(rendered, timings)
        if isinstance(inv, Refusal):
            return inv
        if await planner.quiet(rendered, inv):
            self._render.renderer.mark_installed(rendered.releases)
            if memo.unchanged is None:
                memo.unchanged = tuple(self._unchanged_result(d) for d in rendered.objects)
            timings.update(diff=ms_since(start), apply=0.0)
            return make_result(
                revision=rendered.revision,
                objects=memo.unchanged,
                timings_ms=timings,
                releases=[r.to_report() for r in rendered.releases],
                warnings=self._render.warnings(rendered),
            )
        progress("planning", None, None)
        plan, since = await planner.plan(rendered, inv, settled=settled)
        refused = planner.budget(plan, timings)
        if refused is not None:
            timings["diff"] = ms_since(start)
            return refused
        denied = await admission.denied(parts.store, plan, rendered.registry, rendered.objects)
        timings["diff"] = ms_since(start)
        if denied:  # a policy refuses the revision whole, before anything is written
            return Refusal(tuple(str(p) for p in denied), timings)
        start = time.perf_counter()
        ours: set[int] = set()
        union = plan.union
        if union != inv.entries or (not inv.versions and union):
            try:
                if not inv.versions:
                    made = await inventory.ensure_namespace(parts.store)
                    if made:
                        ours.add(int(made))
                inv = await self._write_inventory(union, inv)
            except GitkrmError as e:
                timings["apply"] = ms_since(start)
                return Refusal((f"writing the inventory failed: {e.message}",), timings)
            ours.update(int(v) for v in inv.versions.values() if v.isdigit())
        applier = Applier(
            parts.store,
            options=parts.options,
            revision=rendered.revision,
            meta=parts.meta,
            typ=parts.typ,
            defaults=parts.defaults,
            reuse=memo.reuse_results,
            progress=progress,
            gate=self._gates.for_sync(rendered, cancel=cancel, progress=progress),
            between=between,
        )
        applied = await applier.apply(plan)
        if not any(r.action is Action.FAILED for r in applied.results):
            self._render.renderer.mark_installed(rendered.releases)
        after = narrowed(plan, applied.actions)
        errors: list[str] = [] if applier.stopped is None else [applier.stopped]
        if after != inv.entries:
            try:
                inv = await self._write_inventory(after, inv)
                ours.update(int(v) for v in inv.versions.values() if v.isdigit())
            except GitkrmError as e:
                errors.append(f"narrowing the inventory failed (extra entries stay): {e.message}")
                inv = Inventory()  # read again next time
        timings["apply"] = ms_since(start)
        await self._remember(rendered, plan, applied, inv, since, ours)
        return make_result(
            revision=rendered.revision,
            objects=applied.results,
            errors=errors,
            timings_ms=timings,
            releases=[r.to_report() for r in rendered.releases],
            warnings=self._render.warnings(rendered),
        )

    def _unchanged_result(self, d: Desired) -> ObjectResult:
        reuse = self._parts.memo.reuse_results
        hit = reuse.get(d.key)
        if hit is not None and hit[0] is d:
            return hit[1]
        result = ObjectResult(d.ref, Action.UNCHANGED, path=d.path, line=d.line or None)
        reuse[d.key] = (d, result)
        return result

    async def _write_inventory(self, entries: frozenset[str], current: Inventory) -> Inventory:
        """Write the inventory (the union of old and new before objects are touched, the
        narrowed one after)."""
        o = self._parts.options
        return await inventory.write(
            self._parts.store, entries, current=current, source=o.source_name,
            inventory_id=o.inventory_id,
        )  # fmt: skip

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
        self.live_after = applied.live
        memo, tracker = self._parts.memo, self._parts.tracker
        unsettled: set[str] = set()
        settled = True
        reuse_steps: dict[str, Step] = {}
        reuse_results = memo.reuse_results
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
        memo.unsettled = unsettled
        memo.reuse_steps = reuse_steps
        if len(reuse_results) > 2 * len(rendered.objects) + 64:
            memo.reuse_results = {
                d.key: reuse_results[d.key] for d in rendered.objects if d.key in reuse_results
            }
        memo.settled = settled and bool(inv.versions)
        memo.inventory = inv if inv.versions else None
        if rendered is not memo.synced:
            memo.unchanged = None
        memo.synced = rendered
        # Watch from the revision the plan read at; after our own writes when nobody
        # else wrote meanwhile (no need to replay thousands of our own events).
        after = await live.current_revision(self._parts.store)
        start = after if live.contiguous(since, after, ours) else since
        clean = memo.settled and live.contiguous(memo.started_at or since, after, ours)
        memo.settled_at = after if clean else None
        tracker.watch((gvk for gvk in rendered.kinds.values() if gvk.version), since=start)
