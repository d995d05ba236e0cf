"""A plan's steps: what is done to one object (`Step`) and the kinds of action (`Op`)."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, NamedTuple

from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.patch import PatchMeta
from gitkrm.store import PatchType
from gitkrm.sync.desired import Desired
from gitkrm.sync.order import stage_of


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
OWNED = frozenset({Op.CREATE, Op.PATCH, Op.UNCHANGED})


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


MetaLookup = Callable[[GVK], "PatchMeta | None"]
