"""The plan: a pure function from (desired objects, inventory, live objects) to steps.

Per desired object, in apply order: create it when absent; refuse it when another owner
has it (see `ownership`); leave it alone when `gitkrm.io/reconcile: disabled` is on the
manifest or the live object; otherwise the three-way patch, or nothing when the patch is
empty (in server-side mode: the apply of the whole object, or nothing when applying it
locally changes nothing, see `serverside`). Then the prunes, in reverse order: inventory
objects the revision no longer has, deleted with a uid precondition, unless
`gitkrm.io/prune: disabled` (or the source does not prune), in which case they are only
dropped from the inventory.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from gitkrm.errors import BadRequest
from gitkrm.krm import Obj, ObjectRef
from gitkrm.sync import keys
from gitkrm.sync.appsource_spec import NAMESPACE_PATH
from gitkrm.sync.desired import Desired
from gitkrm.sync.modes import (
    ObjectPlanner,
    ServerSide,
    builtin_defaults,
    builtin_type,
    ignored_pointers,
    planner_for,
)
from gitkrm.sync.objkey import parse_key
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.order import prune_order
from gitkrm.sync.ownership import decide
from gitkrm.sync.peers import FLUX_SSA, left_in_place, reconcile_disabled
from gitkrm.sync.results import Action
from gitkrm.sync.serverside import DefaultsLookup, TypeLookup
from gitkrm.sync.steps import OWNED, WRITES, MetaLookup, Op, Step

__all__ = [
    "WRITES",
    "MetaLookup",
    "Op",
    "Plan",
    "Step",
    "applied_unchanged",
    "builtin_type",
    "ignored_pointers",
    "make_plan",
    "narrowed",
    "plan_object",
    "plan_prune",
    "prune_candidates",
]


@dataclass(frozen=True, slots=True)
class Plan:
    """What a sync does. `steps`: the desired objects in apply order, then the prunes in
    prune order. `errors`: why the revision can't be applied at all (no steps then, but
    for a guard's refusal: `guard` names it and the steps show what it stopped)."""

    revision: str
    steps: tuple[Step, ...]
    inventory: frozenset[str]  # inventory keys before the sync
    errors: tuple[str, ...] = ()
    guard: str = ""  # the guard that refused the revision (sync.guards.Guard)

    @property
    def in_sync(self) -> bool:
        """Nothing to write and nothing refused: `gitkrm diff` exits 0."""
        return not self.errors and all(
            s.op in (Op.UNCHANGED, Op.SKIP, Op.FORGET, Op.ORPHAN) for s in self.steps
        )

    @property
    def union(self) -> frozenset[str]:
        """The inventory written before any object is touched: old and new together."""
        new = {s.key for s in self.steps if s.op in OWNED and s.desired is not None}
        return self.inventory | new


def plan_object(
    d: Desired,
    live: Obj | None,
    *,
    options: SyncOptions,
    revision: str,
    meta: MetaLookup,
    typ: TypeLookup = builtin_type,
    planner: ObjectPlanner | None = None,
    inventory: Collection[str] = frozenset(),
) -> Step:
    """The step for one desired object given its live state (None: absent). What is the
    same in both apply modes is decided here; the mode's planner (one per plan: pass it
    in) makes the create body or plans the change, in one call. `inventory`: the keys the
    source's inventory lists (for objects older gitkrm labelled, see `keys.owner_of`)."""
    if planner is None:
        planner = planner_for(options=options, revision=revision, meta=meta, typ=typ)
    if d.ssa or d.server_side:
        if d.ssa == "Ignore":
            return _untouched(Op.SKIP, d, live, message=f"{FLUX_SSA}: Ignore: left alone")
        if d.server_side and not options.server_side:
            planner = planner_for(
                options=replace(options, apply_mode="server-side"),
                revision=revision,
                meta=meta,
                typ=typ,
            )
    if live is None:
        body = planner.create_body(d)
        if isinstance(planner, ServerSide):
            return Step(Op.CREATE, d.ref, d.key, desired=d, body=body, patch_type="apply")
        return Step(Op.CREATE, d.ref, d.key, desired=d, body=body)
    md = keys.metadata(live)
    if md.get("deletionTimestamp"):
        return _untouched(
            Op.FAIL,
            d,
            live,
            message="the object is being deleted; it is created again once it is gone",
        )
    decision = decide(
        live, source=options.source_name, policy=options.adoption, listed=d.key in inventory
    )
    if not decision.allowed:
        if d.path == NAMESPACE_PATH:  # Argo CD's CreateNamespace=true creates it if missing
            why = decision.reason.removeprefix("conflict: ")
            message = f"CreateNamespace=true: the namespace exists ({why}): used as it is"
            return _untouched(Op.SKIP, d, live, message=message)
        return _untouched(Op.REFUSE, d, live, message=decision.reason)
    if (
        not d.reconcile
        or keys.flag(live, keys.RECONCILE, keys.DISABLED)
        or reconcile_disabled(keys.annotations_of(live))
    ):
        return _untouched(Op.SKIP, d, live, message="reconcile disabled: left alone")
    if d.ssa == "IfNotPresent":
        return _untouched(
            Op.UNCHANGED, d, live, message=f"{FLUX_SSA}: IfNotPresent: it exists, left as it is"
        )
    return planner.change(d, live, adopt=decision.adopt)


def _untouched(op: Op, d: Desired, live: Obj | None, *, message: str) -> Step:
    """A step that writes nothing to the object (skipped, refused, failed, unchanged), and why."""
    return Step(op, d.ref, d.key, desired=d, live=live, message=message)


def plan_prune(ref: ObjectRef, key: str, live: Obj | None, *, options: SyncOptions) -> Step:
    """The step for an inventory object the revision no longer has."""
    if live is None:
        return Step(Op.FORGET, ref, key, message="already gone")
    if keys.owner_of(live, listed_by=options.source_name) != options.source_name:
        return Step(
            Op.FORGET, ref, key, live=live, message="no longer owned by this source: left in place"
        )
    if not options.prune:
        return Step(Op.ORPHAN, ref, key, live=live, message="pruning is disabled for this source")
    project = options.app_source.project if options.app_source is not None else None
    if project is not None:
        from gitkrm.sync.appproject import ref_problem  # interpreted Applications only

        problem = ref_problem(project, ref)
        if problem is not None:
            return Step(Op.ORPHAN, ref, key, live=live, message=f"{problem}: left in place")
    if keys.flag(live, keys.PRUNE, keys.DISABLED):
        return Step(
            Op.ORPHAN, ref, key, live=live, message=f"{keys.PRUNE}: disabled: left in place"
        )
    if keys.flag(live, keys.RECONCILE, keys.DISABLED):
        return Step(Op.ORPHAN, ref, key, live=live, message="reconcile disabled: left in place")
    why = left_in_place(keys.annotations_of(live))
    if why is not None:
        return Step(Op.ORPHAN, ref, key, live=live, message=why)
    uid = keys.metadata(live).get("uid")
    return Step(Op.PRUNE, ref, key, live=live, uid=uid if isinstance(uid, str) else None)


def prune_candidates(
    inventory: Collection[str], wanted: Collection[str]
) -> tuple[dict[str, ObjectRef], list[str]]:
    """Inventory entries the revision no longer has (parsed), and malformed entries."""
    out: dict[str, ObjectRef] = {}
    bad: list[str] = []
    for k in inventory:
        if k in wanted:
            continue
        try:
            out[k] = parse_key(k)
        except BadRequest:
            bad.append(k)
    return out, bad


def applied_unchanged(
    desired: Sequence[Desired], live: Mapping[ObjectRef, Obj | None], inventory: Collection[str]
) -> set[str]:
    """The keys of objects whose live last-applied configuration is what `desired` applies,
    for a store known to hold exactly what a settled client-side sync of the same settings
    left (`agent.lastsync.settled`): their three-way patch is empty, so they are planned as
    unchanged without computing it. Objects not in the inventory (left in place by an
    earlier revision, where drift may linger) and server-side ones are not among them."""
    out: set[str] = set()
    for d in desired:
        if d.ssa or d.server_side or d.key not in inventory:
            continue
        obj = live.get(d.ref)
        if obj is not None and keys.annotations_of(obj).get(keys.LAST_APPLIED) == d.applied:
            out.add(d.key)
    return out


def make_plan(
    *,
    revision: str,
    desired: Sequence[Desired],
    inventory: frozenset[str],
    live: Mapping[ObjectRef, Obj | None],
    options: SyncOptions,
    meta: MetaLookup,
    typ: TypeLookup = builtin_type,
    in_sync: Collection[str] = (),
    reuse: Mapping[str, Step] | None = None,
    defaults: DefaultsLookup = builtin_defaults,
) -> Plan:
    """Plan a revision. `desired` is in apply order; `inventory` holds the inventory's
    keys; `live` the live state of every object read (None: absent); `in_sync` the keys
    of objects known unchanged since they were last applied (planned as unchanged
    without being read). `reuse` may hold the unchanged steps of the last plan: one whose
    desired object is the same is taken as is (planning 10,000 quiet objects allocates
    nothing)."""
    steps: list[Step] = []
    wanted: set[str] = set()
    planner = planner_for(options=options, revision=revision, meta=meta, typ=typ, defaults=defaults)
    for d in desired:
        wanted.add(d.key)
        if d.key in in_sync:
            step = reuse.get(d.key) if reuse is not None else None
            if step is None or step.desired is not d:
                step = Step(Op.UNCHANGED, d.ref, d.key, desired=d)
            steps.append(step)
        else:
            steps.append(
                plan_object(
                    d,
                    live.get(d.ref),
                    options=options,
                    revision=revision,
                    meta=meta,
                    planner=planner,
                    inventory=inventory,
                )
            )
    gone, bad = prune_candidates(inventory, wanted)
    by_ref = {ref: k for k, ref in gone.items()}
    for ref in prune_order((ref, live.get(ref)) for ref in gone.values()):
        steps.append(plan_prune(ref, by_ref[ref], live.get(ref), options=options))
    for k in sorted(bad):
        ref = ObjectRef(group="", kind="InventoryEntry", name=k)
        steps.append(Step(Op.FORGET, ref, k, message="malformed inventory entry: dropped"))
    return Plan(revision=revision, steps=tuple(steps), inventory=inventory)


def narrowed(plan: Plan, actions: Sequence[Action]) -> frozenset[str]:
    """The inventory after applying `plan`, from what happened to each object: the
    objects this source now has, those it had and left alone or failed to change, and
    the prunes that failed. `actions` are what happened to each step, in plan order."""
    out: set[str] = set()
    for s, action in zip(plan.steps, actions, strict=True):
        if s.desired is not None:
            if action in _KEPT or (action in _KEPT_IFOWNED and s.key in plan.inventory):
                out.add(s.key)
        elif s.op is Op.PRUNE and action is Action.FAILED:
            out.add(s.key)
    return frozenset(out)


_KEPT = frozenset({Action.CREATED, Action.CONFIGURED, Action.UNCHANGED})
_KEPT_IFOWNED = frozenset({Action.SKIPPED, Action.FAILED})
