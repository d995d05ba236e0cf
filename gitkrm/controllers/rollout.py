"""The arithmetic of Deployment rollouts (pkg/controller/deployment/util), on raw objects.

Replica counts of ReplicaSets are read from spec.replicas unless said otherwise; `surge` and
`unavailable` are maxSurge and maxUnavailable resolved against the desired replicas.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TypedDict

from gitkrm.controllers.objects import annotations_of
from gitkrm.controllers.revisions import DESIRED_REPLICAS, MAX_REPLICAS
from gitkrm.krm import Obj
from gitkrm.krm.types import Condition


class DeploymentStatus(TypedDict, total=False):
    """`status` of a Deployment (apps/v1 DeploymentStatus)."""

    observedGeneration: int
    replicas: int
    updatedReplicas: int
    readyReplicas: int
    availableReplicas: int
    unavailableReplicas: int
    terminatingReplicas: int
    collisionCount: int
    conditions: list[Condition]


def spec_replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def status_int(obj: Obj, field: str) -> int:
    value = (obj.get("status") or {}).get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def scaled_value(value: object, total: int, *, round_up: bool) -> int:
    """GetScaledValueFromIntOrPercent."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%"):
        try:
            pct = int(value[:-1])
        except ValueError:
            return 0
        exact = pct * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return 0


def is_rolling(deployment: Obj) -> bool:
    strategy = (deployment.get("spec") or {}).get("strategy") or {}
    return (strategy.get("type") or "RollingUpdate") == "RollingUpdate"


def fenceposts(deployment: Obj) -> tuple[int, int]:
    """ResolveFenceposts: (maxSurge, maxUnavailable); both zero would stall, so
    maxUnavailable becomes 1."""
    desired = spec_replicas(deployment)
    rolling = ((deployment.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    surge = scaled_value(rolling.get("maxSurge", "25%"), desired, round_up=True)
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(deployment: Obj) -> int:
    return fenceposts(deployment)[0] if is_rolling(deployment) else 0


def max_unavailable(deployment: Obj) -> int:
    desired = spec_replicas(deployment)
    if not is_rolling(deployment) or desired == 0:
        return 0
    return min(fenceposts(deployment)[1], desired)


def total(sets: Iterable[Obj]) -> int:
    return sum(spec_replicas(rs) for rs in sets)


def actual(sets: Iterable[Obj]) -> int:
    return sum(status_int(rs, "replicas") for rs in sets)


def pods_upper_bound(sets: Iterable[Obj]) -> int:
    """Pods the ReplicaSets may have right now: a ReplicaSet scaled down still has its old
    pods until its controller reports them gone (status.replicas)."""
    return sum(max(spec_replicas(rs), status_int(rs, "replicas")) for rs in sets)


def available(sets: Iterable[Obj]) -> int:
    return sum(status_int(rs, "availableReplicas") for rs in sets)


def ready(sets: Iterable[Obj]) -> int:
    return sum(status_int(rs, "readyReplicas") for rs in sets)


def active(sets: Iterable[Obj]) -> list[Obj]:
    return [rs for rs in sets if spec_replicas(rs) > 0]


def new_rs_replicas(deployment: Obj, all_sets: Sequence[Obj], new_rs: Obj | None) -> int:
    """NewRSNewReplicas: how far the new ReplicaSet may grow now. The count of current pods
    uses pods_upper_bound (not only spec.replicas as upstream), so the number of pods never
    exceeds replicas + maxSurge even while old pods are still being removed."""
    desired = spec_replicas(deployment)
    current_new = spec_replicas(new_rs) if new_rs is not None else 0
    if not is_rolling(deployment):
        return desired
    current = pods_upper_bound(all_sets)
    limit = desired + max_surge(deployment)
    if current >= limit:
        return current_new
    grow = min(limit - current, desired - current_new)
    return current_new + max(0, grow)


def int_annotation(obj: Obj, key: str) -> int | None:
    try:
        return int(annotations_of(obj)[key])
    except (KeyError, ValueError):
        return None


def saturated(deployment: Obj, rs: Obj | None) -> bool:
    if rs is None:
        return False
    desired = spec_replicas(deployment)
    return (
        int_annotation(rs, DESIRED_REPLICAS) == desired
        and spec_replicas(rs) == desired
        and status_int(rs, "availableReplicas") == desired
    )


def proportion(deployment: Obj, rs: Obj, to_add: int, added: int) -> int:
    """GetReplicaSetProportion: this ReplicaSet's share of a scaling event."""
    if spec_replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    desired = spec_replicas(deployment)
    if desired == 0:
        fraction = -spec_replicas(rs)
    else:
        target = desired + max_surge(deployment)
        annotated = int_annotation(rs, MAX_REPLICAS)
        if annotated is None or annotated == 0:
            annotated = status_int(deployment, "replicas") or 1
        fraction = round(spec_replicas(rs) * target / annotated) - spec_replicas(rs)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def complete(deployment: Obj, status: DeploymentStatus) -> bool:
    """DeploymentComplete."""
    desired = spec_replicas(deployment)
    return bool(
        status.get("updatedReplicas", 0) == desired
        and status.get("replicas", 0) == desired
        and status.get("availableReplicas", 0) == desired
        and status.get("observedGeneration", 0)
        >= int(deployment["metadata"].get("generation") or 0)
    )


def progressing(deployment: Obj, new: DeploymentStatus) -> bool:
    """DeploymentProgressing: the new status moved the rollout forward."""
    old = deployment.get("status") or {}
    old_old = int(old.get("replicas") or 0) - int(old.get("updatedReplicas") or 0)
    new_old = int(new.get("replicas") or 0) - int(new.get("updatedReplicas") or 0)
    return (
        int(new.get("updatedReplicas") or 0) > int(old.get("updatedReplicas") or 0)
        or new_old < old_old
        or int(new.get("readyReplicas") or 0) > int(old.get("readyReplicas") or 0)
        or int(new.get("availableReplicas") or 0) > int(old.get("availableReplicas") or 0)
    )
