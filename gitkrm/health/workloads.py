"""kstatus's rules for the workload kinds: Deployment, ReplicaSet, StatefulSet, DaemonSet."""

from __future__ import annotations

from gitkrm.health.fields import conditions, get_int, get_str
from gitkrm.health.generic import generation_set
from gitkrm.health.result import Health, HealthResult, current, failed, in_progress
from gitkrm.krm import Obj

MAX_INT32 = 2**31 - 1


def _count(obj: Obj, field: str) -> int:
    return get_int(obj, "status", field, default=0)


def _shortfall(*counts: tuple[str, int, int]) -> HealthResult | None:
    """kstatus's `Less<What>` verdict on the first of `counts` (what, have, want) that has
    fewer than it wants; None when none has."""
    for what, have, want in counts:
        if want > have:
            return in_progress(f"Less{what}", f"{what}: {have}/{want}")
    return None


def _extra_pods(replicas: int, spec: int) -> HealthResult | None:
    """ExtraPods while more replicas run than the spec wants (old ones terminating)."""
    if replicas > spec:
        return in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    return None


def _replica_failure(obj: Obj) -> str | None:
    """The message of a ReplicaFailure condition that is True (pods the API server refused:
    a quota, a LimitRange, an admission policy), None without one."""
    for c in conditions(obj):
        if c.get("type") == "ReplicaFailure" and c.get("status") == "True":
            return str(c.get("message") or c.get("reason") or "")
    return None


def deployment(obj: Obj) -> HealthResult:
    """Failed once the controller reports ProgressDeadlineExceeded; Current when every
    replica is updated, available and ready and the new ReplicaSet is available. While
    its pods are refused (ReplicaFailure), the verdict says why (kstatus does not look)."""
    result = _deployment(obj)
    failure = _replica_failure(obj) if result.status is Health.IN_PROGRESS else None
    if failure:
        return in_progress("ReplicaFailure", f"{result.message}: {failure}")
    return result


def _deployment(obj: Obj) -> HealthResult:
    progressing = get_int(obj, "spec", "progressDeadlineSeconds", default=MAX_INT32) == MAX_INT32
    available = False
    for c in conditions(obj):
        if c.get("type") == "Progressing":
            if c.get("reason") == "ProgressDeadlineExceeded":
                return failed("ProgressDeadlineExceeded", "Progress deadline exceeded")
            if c.get("status") == "True" and c.get("reason") == "NewReplicaSetAvailable":
                progressing = True
        elif c.get("type") == "Available" and c.get("status") == "True":
            available = True
    spec = get_int(obj, "spec", "replicas", default=1)
    replicas = _count(obj, "replicas")
    updated = _count(obj, "updatedReplicas")
    short = (
        _shortfall(("Replicas", replicas, spec), ("Updated", updated, spec))
        or _extra_pods(replicas, spec)
        or _shortfall(
            ("Available", _count(obj, "availableReplicas"), updated),
            ("Ready", _count(obj, "readyReplicas"), spec),
        )
    )
    if short is not None:
        return short
    if not progressing:
        return in_progress("ReplicaSetNotAvailable", "ReplicaSet not Available")
    if not available:
        return in_progress("DeploymentNotAvailable", "Deployment not Available")
    return current(f"Deployment is available. Replicas: {replicas}")


def replica_set(obj: Obj) -> HealthResult:
    failure = _replica_failure(obj)
    if failure is not None:
        detail = f": {failure}" if failure else ". Check Pods"
        return in_progress("ReplicaFailure", f"Replica Failure condition{detail}")
    spec = get_int(obj, "spec", "replicas", default=1)
    replicas = _count(obj, "replicas")
    short = _shortfall(
        ("Labelled", _count(obj, "fullyLabeledReplicas"), spec),
        ("Available", _count(obj, "availableReplicas"), spec),
        ("Ready", _count(obj, "readyReplicas"), spec),
    ) or _extra_pods(replicas, spec)
    return short or current(f"ReplicaSet is available. Replicas: {replicas}")


def stateful_set(obj: Obj) -> HealthResult:
    """The StatefulSet controller sets no conditions: counts and revisions decide."""
    if get_str(obj, "spec", "updateStrategy", "type") == "OnDelete":
        return current("StatefulSet is using the ondelete update strategy")
    spec = get_int(obj, "spec", "replicas", default=1)
    replicas = _count(obj, "replicas")
    short = _shortfall(
        ("Replicas", replicas, spec), ("Ready", _count(obj, "readyReplicas"), spec)
    ) or _extra_pods(replicas, spec)
    if short is not None:
        return short
    updated = _count(obj, "updatedReplicas")
    partition = get_int(obj, "spec", "updateStrategy", "rollingUpdate", "partition", default=-1)
    if partition != -1:
        if updated < spec - partition:
            return in_progress("PartitionRollout", f"updated: {updated}/{spec - partition}")
        return current(f"Partition rollout complete. updated: {updated}")
    current_replicas = _count(obj, "currentReplicas")
    if spec > current_replicas:
        return in_progress("LessCurrent", f"current: {current_replicas}/{spec}")
    if get_str(obj, "status", "currentRevision") != get_str(obj, "status", "updateRevision"):
        return in_progress("RevisionMismatch", "Waiting for updated revision to match current")
    return current(f"All replicas scheduled as expected. Replicas: {replicas}")


def daemon_set(obj: Obj) -> HealthResult:
    unset = generation_set(obj)
    if unset is not None:
        return unset
    desired = get_int(obj, "status", "desiredNumberScheduled", default=-1)
    if desired == -1:
        return in_progress("NoDesiredNumber", "Missing .status.desiredNumberScheduled")
    short = _shortfall(
        ("Current", _count(obj, "currentNumberScheduled"), desired),
        ("Updated", _count(obj, "updatedNumberScheduled"), desired),
        ("Available", _count(obj, "numberAvailable"), desired),
        ("Ready", _count(obj, "numberReady"), desired),
    )
    return short or current(f"All replicas scheduled as expected. Replicas: {desired}")
