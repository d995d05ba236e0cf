"""The engine's plan step: the inventory read and guarded, the live objects that may have
changed read, and the plan made; or the pass found quiet, with nothing to read.

Only objects the drift tracker can't vouch for are read and diffed (changed since they
were last seen, unsettled, of a kind not watched yet, or about to be pruned). The
empty-revision guard and the prune budget (`guards`) refuse here, before anything is
written; `dry_plan` is what `plan` and `diff` show, with admission's verdict as errors.
"""

from __future__ import annotations

import asyncio

from gitkrm.krm import GVK, ObjectRef
from gitkrm.sync import admission, guards, inventory, live
from gitkrm.sync.engine_parts import EngineParts
from gitkrm.sync.inventory import Inventory
from gitkrm.sync.plan import Plan, applied_unchanged, make_plan, prune_candidates
from gitkrm.sync.refusal import Refusal, guarded
from gitkrm.sync.render import RenderResult


class Planner:
    """Plans one engine's passes (see the module docstring)."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts
        self.allow_prune: tuple[str, int | None] = ("", None)
        """The revision being synced and its `Gitkrm-Allow-Prune` trailer (the budget's
        way out, for that revision only)."""

    async def read_inventory(
        self, rendered: RenderResult, timings: dict[str, float]
    ) -> Inventory | Refusal:
        """The source's inventory (the remembered one while it is as written), unless the
        empty-revision guard refuses the revision."""
        parts = self._parts
        o = parts.options
        inv = await inventory.read(
            parts.store,
            source=o.source_name,
            inventory_id=o.inventory_id,
            cache=parts.memo.inventory,
        )
        verdict = guards.check_empty(
            revision=rendered.revision,
            objects=len(rendered.objects),
            inventory=len(inv.entries),
            allow_empty=o.allow_empty,
        )
        return guarded(verdict, timings, None) or inv

    def budget(self, plan: Plan, timings: dict[str, float]) -> Refusal | None:
        """The prune budget's refusal of a plan (the commit's trailer may lift it)."""
        revision, allowed = self.allow_prune
        verdict = guards.check_prune_budget(
            revision=plan.revision,
            steps=plan.steps,
            inventory=len(plan.inventory),
            budget=self._parts.options.prune_budget,
            allowed=allowed if revision == plan.revision else None,
        )
        return guarded(verdict, timings, plan)

    async def quiet(self, rendered: RenderResult, inv: Inventory) -> bool:
        """Nothing to do: the synced revision again, everything settled, no drift, the
        inventory as written, every kind watched."""
        memo, tracker = self._parts.memo, self._parts.tracker
        if rendered is not memo.synced or not memo.settled or inv is not memo.inventory:
            return False
        await tracker.settle()
        if tracker.dirty:
            return False
        return set(rendered.kinds) <= tracker.trusted_kinds()

    async def plan(
        self,
        rendered: RenderResult,
        inv: Inventory,
        *,
        dry_run: bool = False,
        settled: bool = False,
    ) -> tuple[Plan, str]:
        """The plan, and the store revision its live view was read at (`settled`: see
        `SyncEngine.preview`)."""
        parts = self._parts
        since = await live.current_revision(parts.store)
        tracker = parts.tracker
        await tracker.settle()
        trusted = tracker.trusted_kinds()
        all_trusted = set(rendered.kinds) <= trusted
        unsettled = parts.memo.unsettled
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
            wanted[ref] = parts.read_gvk(ref)
        if not dry_run:  # objects read now are clean until their next event
            tracker.dirty.difference_update(wanted_keys)
            # Follow the kinds from now: new informers make their first list before this
            # sync writes (cheap before a first sync), then take in its events as they come.
            if tracker.watch(gvk for gvk in rendered.kinds.values() if gvk.version):
                await asyncio.sleep(0)
        live_objects = await live.read(parts.store, wanted)
        if settled and not parts.options.server_side:
            in_sync |= applied_unchanged(rendered.objects, live_objects, inv.entries)
        plan = make_plan(
            revision=rendered.revision,
            desired=rendered.objects,
            inventory=inv.entries,
            live=live_objects,
            options=parts.options,
            meta=parts.meta,
            typ=parts.typ,
            defaults=parts.defaults,
            in_sync=in_sync,
            reuse=None if dry_run else parts.memo.reuse_steps,
        )
        return plan, since

    async def dry_plan(
        self, rendered: RenderResult, timings: dict[str, float], *, settled: bool
    ) -> Plan:
        """What a sync of `rendered` would do, writing nothing; what it would refuse, as
        the plan's errors."""
        inv = await self.read_inventory(rendered, timings)
        if isinstance(inv, Refusal):
            return inv.plan(rendered.revision)
        plan, _ = await self.plan(rendered, inv, dry_run=True, settled=settled)
        refused = self.budget(plan, timings)
        if refused is not None:
            return refused.plan(rendered.revision)
        denied = await admission.denied(
            self._parts.store, plan, rendered.registry, rendered.objects
        )
        if denied:  # what sync would refuse, diff reports as errors
            return Refusal(tuple(str(p) for p in denied), timings).plan(rendered.revision)
        return plan
