"""Status conditions (metav1.Condition and the older per-kind shapes): read, set, remove.

`set_condition` keeps Kubernetes' rule that lastTransitionTime moves only when the status
does; every controller, the CRD registration and the agent's GitSource status use it.
Inputs are never changed (cached objects are shared): the writers return new lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from gitkrm.krm.clock import WALL, Clock, stamp
from gitkrm.krm.types import Condition

__all__ = [
    "Condition",
    "conditions_of",
    "find_condition",
    "get_condition",
    "remove_condition",
    "set_condition",
]


def conditions_of(obj: Mapping[str, object]) -> list[Condition]:
    """The conditions of an object's status (only the entries that are maps)."""
    status = obj.get("status")
    conds = status.get("conditions") if isinstance(status, Mapping) else None
    if not isinstance(conds, list):
        return []
    return cast("list[Condition]", [c for c in conds if isinstance(c, dict)])


def find_condition(conditions: object, kind: str) -> Condition | None:
    """The condition of one type in a list of conditions (None when absent)."""
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, dict) and c.get("type") == kind:
            return cast("Condition", c)
    return None


def get_condition(obj: Mapping[str, object], kind: str) -> Condition | None:
    """The condition of one type on an object's status."""
    status = obj.get("status")
    return find_condition(status.get("conditions") if isinstance(status, Mapping) else None, kind)


def set_condition(
    conditions: list[Condition],
    kind: str,
    status: str,
    reason: str,
    message: str,
    *,
    now: str | None = None,
    update_time: bool = False,
    extra: Condition | None = None,
    clock: Clock = WALL,
) -> list[Condition]:
    """A copy of `conditions` with `kind` set; lastTransitionTime moves only when the status
    does (and lastUpdateTime, for the kinds that have one, when `update_time`). `extra`
    fields (e.g. observedGeneration) are set as given. The times are `now`, else `clock`'s."""
    at = now or stamp(clock)
    out: list[Condition] = []
    found = False
    for c in conditions:
        if c.get("type") != kind:
            out.append(c)
            continue
        found = True
        new = c.copy()
        if c.get("status") != status:
            new["lastTransitionTime"] = at
            if update_time:
                new["lastUpdateTime"] = at
        new["status"] = status
        new["reason"] = reason
        new["message"] = message
        if update_time and (c.get("reason") != reason or c.get("message") != message):
            new["lastUpdateTime"] = at
        new.update(extra or {})
        out.append(new)
    if not found:
        new = {"type": kind, "status": status}
        if update_time:
            new["lastUpdateTime"] = at
        new.update({"lastTransitionTime": at, "reason": reason, "message": message})
        new.update(extra or {})
        out.append(new)
    return out


def remove_condition(conditions: list[Condition], kind: str) -> list[Condition]:
    return [c for c in conditions if c.get("type") != kind]
