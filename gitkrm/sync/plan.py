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

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from gitkrm.errors import BadRequest, GitkrmError
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.patch import PatchMeta
from gitkrm.patch.fieldmanager import SchemaType
from gitkrm.schema import ssa_type_for
from gitkrm.store import PatchType
from gitkrm.sync import keys
from gitkrm.sync.desired import Desired
from gitkrm.sync.objkey import parse_key
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.order import prune_order, stage_of
from gitkrm.sync.ownership import decide
from gitkrm.sync.patching import create_body, three_way
from gitkrm.sync.results import Action
from gitkrm.sync.serverside import TypeLookup, apply_config, predict


class Op(StrEnum):
    CREATE = "create"
    PATCH = "patch"
    UNCHANGED = "unchanged"
    REFUSE = "refuse"  # another owner has it
    SKIP = "skip"  # reconcile disabled: left alone
    FAIL = "fail"  # can't be planned (e.g. the object is being deleted)
    PRUNE = "prune"
    ORPHAN = "orphan"  # gone from Git, kept in the store (pruning disabled), dropped from inventory
    FORGET = "forget"  # an inventory entry whose object is gone or no longer ours


WRITES = frozenset({Op.CREATE, Op.PATCH, Op.PRUNE})
# Steps after which the object is (still) this source's: kept in the inventory.
_OWNED = frozenset({Op.CREATE, Op.PATCH, Op.UNCHANGED})


class Step(NamedTuple):
    """One planned action (a named tuple: a plan of 10,000 objects builds 10,000)."""

    op: Op
    ref: ObjectRef
    key: str  # the inventory key (see objkey)
    desired: Desired | None = None
    live: Obj | None = None
    body: Obj | None = None  # CREATE (server-side: the applied configuration)
    patch: Any = None  # PATCH (server-side: the applied configuration, or a migration)
    patch_type: PatchType = "strategic"
    uid: str | None = None  # PRUNE precondition
    message: str = ""
    adopt: bool = False
    after: Obj | None = None  # server-side PATCH: the object as the apply leaves it
    migrate: list[dict[str, Any]] | None = None  # server-side: csaupgrade patch sent first
    force: bool = False  # server-side: the apply takes fields other managers own

    @property
    def stage(self) -> tuple[int, int]:
        d = self.desired
        if d is None:
            return stage_of(self.ref, 0)
        return (d.order_key[0], d.order_key[1])


@dataclass(frozen=True, slots=True)
class Plan:
    """What a sync does. `steps`: the desired objects in apply order, then the prunes in
    prune order. `errors`: why the revision can't be applied at all (no steps then)."""

    revision: str
    steps: tuple[Step, ...]
    inventory: frozenset[str]  # inventory keys before the sync
    errors: tuple[str, ...] = ()

    @property
    def in_sync(self) -> bool:
        """Nothing to write and nothing refused: `gitkrm diff` exits 0."""
        return not self.errors and all(
            s.op in (Op.UNCHANGED, Op.SKIP, Op.FORGET, Op.ORPHAN) for s in self.steps
        )

    @property
    def union(self) -> frozenset[str]:
        """The inventory written before any object is touched: old and new together."""
        new = {s.key for s in self.steps if s.op in _OWNED and s.desired is not None}
        return self.inventory | new


MetaLookup = Callable[[GVK], "PatchMeta | None"]


def builtin_type(gvk: GVK) -> SchemaType:
    """The server-side apply type of a kind without a registry of custom kinds."""
    return ssa_type_for(gvk)


def ignored_pointers(ref: ObjectRef, options: SyncOptions) -> tuple[str, ...]:
    out: list[str] = []
    for ig in options.ignore_differences:
        if ig.matches(group=ref.group, kind=ref.kind, name=ref.name, namespace=ref.namespace):
            out.extend(ig.json_pointers)
    return tuple(out)


def plan_object(
    d: Desired,
    live: Obj | None,
    *,
    options: SyncOptions,
    revision: str,
    meta: MetaLookup,
    typ: TypeLookup = builtin_type,
) -> Step:
    """The step for one desired object given its live state (None: absent). `typ` gives
    a kind's server-side apply type (server-side mode)."""
    if live is None:
        if options.server_side:
            body = apply_config(d, revision=revision)
        else:
            body = create_body(d, revision)
        return Step(Op.CREATE, d.ref, d.key, desired=d, body=body)
    md = keys.metadata(live)
    if md.get("deletionTimestamp"):
        return Step(
            Op.FAIL,
            d.ref,
            d.key,
            desired=d,
            live=live,
            message="the object is being deleted; it is created again once it is gone",
        )
    decision = decide(live, source=options.source_name, policy=options.adoption)
    if not decision.allowed:
        return Step(Op.REFUSE, d.ref, d.key, desired=d, live=live, message=decision.reason)
    if not d.reconcile or keys.flag(live, keys.RECONCILE, keys.DISABLED):
        return Step(
            Op.SKIP, d.ref, d.key, desired=d, live=live, message="reconcile disabled: left alone"
        )
    if options.server_side:
        return _plan_apply(
            d, live, options=options, revision=revision, typ=typ, meta=meta, adopt=decision.adopt
        )
    try:
        patch, patch_type = three_way(
            d,
            live,
            meta=meta(d.gvk),
            ignore=ignored_pointers(d.ref, options),
            revision=revision,
        )
    except GitkrmError as e:
        return Step(Op.FAIL, d.ref, d.key, desired=d, live=live, message=e.message)
    if patch is None:
        return Step(Op.UNCHANGED, d.ref, d.key, desired=d, live=live)
    return Step(
        Op.PATCH,
        d.ref,
        d.key,
        desired=d,
        live=live,
        patch=patch,
        patch_type=patch_type,
        adopt=decision.adopt,
        message="adopted" if decision.adopt else "",
    )


def _plan_apply(
    d: Desired,
    live: Obj,
    *,
    options: SyncOptions,
    revision: str,
    typ: TypeLookup,
    meta: MetaLookup,
    adopt: bool,
) -> Step:
    try:
        applied = predict(
            d,
            live,
            typ=typ(d.gvk),
            revision=revision,
            ignore=ignored_pointers(d.ref, options),
            meta=meta(d.gvk),
        )
    except GitkrmError as e:
        return Step(Op.FAIL, d.ref, d.key, desired=d, live=live, message=e.message)
    if applied is None:
        return Step(Op.UNCHANGED, d.ref, d.key, desired=d, live=live)
    message = "adopted" if adopt else ""
    if applied.config is None:  # only the client-side to server-side migration
        return Step(
            Op.PATCH,
            d.ref,
            d.key,
            desired=d,
            live=live,
            patch=applied.migrate,
            patch_type="json",
            adopt=adopt,
            message=message,
            after=applied.after,
        )
    return Step(
        Op.PATCH,
        d.ref,
        d.key,
        desired=d,
        live=live,
        patch=applied.config,
        patch_type="apply",
        adopt=adopt,
        message=message,
        after=applied.after,
        migrate=applied.migrate,
        force=applied.force,
    )


def plan_prune(ref: ObjectRef, key: str, live: Obj | None, *, options: SyncOptions) -> Step:
    """The step for an inventory object the revision no longer has."""
    if live is None:
        return Step(Op.FORGET, ref, key, message="already gone")
    if keys.source_of(live) != options.source_name:
        return Step(
            Op.FORGET, ref, key, live=live, message="no longer owned by this source: left in place"
        )
    if not options.prune:
        return Step(Op.ORPHAN, ref, key, live=live, message="pruning is disabled for this source")
    if keys.flag(live, keys.PRUNE, keys.DISABLED):
        return Step(
            Op.ORPHAN, ref, key, live=live, message=f"{keys.PRUNE}: disabled: left in place"
        )
    if keys.flag(live, keys.RECONCILE, keys.DISABLED):
        return Step(Op.ORPHAN, ref, key, live=live, message="reconcile disabled: left in place")
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
) -> Plan:
    """Plan a revision. `desired` is in apply order; `inventory` holds the inventory's
    keys; `live` the live state of every object read (None: absent); `in_sync` the keys
    of objects known unchanged since they were last applied (planned as unchanged
    without being read). `reuse` may hold the unchanged steps of the last plan: one whose
    desired object is the same is taken as is (planning 10,000 quiet objects allocates
    nothing)."""
    steps: list[Step] = []
    wanted: set[str] = set()
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
                    d, live.get(d.ref), options=options, revision=revision, meta=meta, typ=typ
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
            if action in _KEPT or (action in _KEPT_IF_OWNED and s.key in plan.inventory):
                out.add(s.key)
        elif s.op is Op.PRUNE and action is Action.FAILED:
            out.add(s.key)
    return frozenset(out)


_KEPT = frozenset({Action.CREATED, Action.CONFIGURED, Action.UNCHANGED})
_KEPT_IF_OWNED = frozenset({Action.SKIPPED, Action.FAILED})
