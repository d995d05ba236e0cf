"""kstatus's rules for the workload kinds: Deployment, ReplicaSet, StatefulSet, DaemonSet."""

from __future__ import annotations

from gitkrm.health.fields import conditions, get_int, get_str
from gitkrm.health.generic import generation_set
from gitkrm.health.result import HealthResult, current, failed, in_progress
from gitkrm.krm import Obj

MAX_INT32 = 2**31 - 1


def deployment(obj: Obj) -> HealthResult:
    """Failed once the controller reports ProgressDeadlineExceeded; Current when every
    replica is updated, available and ready and the new ReplicaSet is available."""
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
    replicas = get_int(obj, "status", "replicas", default=0)
    updated = get_int(obj, "status", "updatedReplicas", default=0)
    ready = get_int(obj, "status", "readyReplicas", default=0)
    avail = get_int(obj, "status", "availableReplicas", default=0)
    if spec > replicas:
        return in_progress("LessReplicas", f"Replicas: {replicas}/{spec}")
    if spec > updated:
        return in_progress("LessUpdated", f"Updated: {updated}/{spec}")
    if replicas > spec:
        return in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    if updated > avail:
        return in_progress("LessAvailable", f"Available: {avail}/{updated}")
    if spec > ready:
        return in_progress("LessReady", f"Ready: {ready}/{spec}")
    if not progressing:
        return in_progress("ReplicaSetNotAvailable", "ReplicaSet not Available")
    if not available:
        return in_progress("DeploymentNotAvailable", "Deployment not Available")
    return current(f"Deployment is available. Replicas: {replicas}")


def replica_set(obj: Obj) -> HealthResult:
    for c in conditions(obj):
        if c.get("type") == "ReplicaFailure" and c.get("status") == "True":
            return in_progress("ReplicaFailure", "Replica Failure condition. Check Pods")
    spec = get_int(obj, "spec", "replicas", default=1)
    replicas = get_int(obj, "status", "replicas", default=0)
    ready = get_int(obj, "status", "readyReplicas", default=0)
    avail = get_int(obj, "status", "availableReplicas", default=0)
    labelled = get_int(obj, "status", "fullyLabeledReplicas", default=0)
    if spec > labelled:
        return in_progress("LessLabelled", f"Labelled: {labelled}/{spec}")
    if spec > avail:
        return in_progress("LessAvailable", f"Available: {avail}/{spec}")
    if spec > ready:
        return in_progress("LessReady", f"Ready: {ready}/{spec}")
    if replicas > spec:
        return in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    return current(f"ReplicaSet is available. Replicas: {replicas}")


def stateful_set(obj: Obj) -> HealthResult:
    """The StatefulSet controller sets no conditions: counts and revisions decide."""
    if get_str(obj, "spec", "updateStrategy", "type") == "OnDelete":
        return current("StatefulSet is using the ondelete update strategy")
    spec = get_int(obj, "spec", "replicas", default=1)
    ready = get_int(obj, "status", "readyReplicas", default=0)
    current_replicas = get_int(obj, "status", "currentReplicas", default=0)
    updated = get_int(obj, "status", "updatedReplicas", default=0)
    replicas = get_int(obj, "status", "replicas", default=0)
    partition = get_int(obj, "spec", "updateStrategy", "rollingUpdate", "partition", default=-1)
    if spec > replicas:
        return in_progress("LessReplicas", f"Replicas: {replicas}/{spec}")
    if spec > ready:
        return in_progress("LessReady", f"Ready: {ready}/{spec}")
    if replicas > spec:
        return in_progress("ExtraPods", f"Pending termination: {replicas - spec}")
    if partition != -1:
        if updated < spec - partition:
            return in_progress("PartitionRollout", f"updated: {updated}/{spec - partition}")
        return current(f"Partition rollout complete. updated: {updated}")
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
    scheduled = get_int(obj, "status", "currentNumberScheduled", default=0)
    updated = get_int(obj, "status", "updatedNumberScheduled", default=0)
    avail = get_int(obj, "status", "numberAvailable", default=0)
    ready = get_int(obj, "status", "numberReady", default=0)
    if desired == -1:
        return in_progress("NoDesiredNumber", "Missing .status.desiredNumberScheduled")
    if desired > scheduled:
        return in_progress("LessCurrent", f"Current: {scheduled}/{desired}")
    if desired > updated:
        return in_progress("LessUpdated", f"Updated: {updated}/{desired}")
    if desired > avail:
        return in_progress("LessAvailable", f"Available: {avail}/{desired}")
    if desired > ready:
        return in_progress("LessReady", f"Ready: {ready}/{desired}")
    return current(f"All replicas scheduled as expected. Replicas: {desired}")
