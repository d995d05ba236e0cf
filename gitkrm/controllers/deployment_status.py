"""Deployment status: the counts, the Available and Progressing conditions and the progress
deadline (pkg/controller/deployment/progress.go and sync.go's calculateStatus)."""

from __future__ import annotations

from collections.abc import Sequence

from gitkrm.controllers import rollout
from gitkrm.controllers.rollout import DeploymentStatus
from gitkrm.krm import Obj
from gitkrm.krm.clock import format_seconds, parse_timestamp
from gitkrm.krm.conditions import conditions_of, get_condition
from gitkrm.krm.types import Condition

MAX_INT32 = 2**31 - 1
PROGRESSING = "Progressing"
AVAILABLE = "Available"
REPLICA_FAILURE = "ReplicaFailure"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"


def condition(kind: str, status: str, reason: str, message: str, *, now: float) -> Condition:
    """A Deployment condition set at `now` (seconds since the epoch, the controller's
    clock)."""
    at = format_seconds(now)
    return {
        "type": kind,
        "status": status,
        "lastUpdateTime": at,
        "lastTransitionTime": at,
        "reason": reason,
        "message": message,
    }


def set_condition(conds: list[Condition], new: Condition) -> list[Condition]:
    """SetDeploymentCondition: unchanged when status and reason are the same; otherwise the
    condition is replaced (moved last), keeping lastTransitionTime if the status is."""
    cur = next((c for c in conds if c.get("type") == new["type"]), None)
    if (
        cur is not None
        and cur.get("status") == new["status"]
        and cur.get("reason") == new["reason"]
    ):
        return conds
    if cur is not None and cur.get("status") == new["status"]:
        new = {
            **new,
            "lastTransitionTime": cur.get("lastTransitionTime", new["lastTransitionTime"]),
        }
    return [c for c in conds if c.get("type") != new["type"]] + [new]


def remove_condition(conds: list[Condition], kind: str) -> list[Condition]:
    return [c for c in conds if c.get("type") != kind]


def has_deadline(d: Obj) -> bool:
    value = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return isinstance(value, int) and value != MAX_INT32


def calculate(
    d: Obj, all_sets: Sequence[Obj], new_rs: Obj | None, *, now: float
) -> DeploymentStatus:
    """calculateStatus: counts summed over the ReplicaSets, and Available."""
    available = rollout.available(all_sets)
    unavailable = max(0, rollout.total(all_sets) - available)
    old = d.get("status") or {}
    status: DeploymentStatus = {"observedGeneration": d["metadata"].get("generation") or 1}
    # Counts of zero are left out (omitempty).
    if replicas := rollout.actual(all_sets):
        status["replicas"] = replicas
    if new_rs is not None and (updated := rollout.actual([new_rs])):
        status["updatedReplicas"] = updated
    if ready := rollout.ready(all_sets):
        status["readyReplicas"] = ready
    if available:
        status["availableReplicas"] = available
    if unavailable:
        status["unavailableReplicas"] = unavailable
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    conds = conditions_of(d)
    if available >= rollout.spec_replicas(d) - rollout.max_unavailable(d):
        cond = condition(
            AVAILABLE,
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            now=now,
        )
    else:
        cond = condition(
            AVAILABLE,
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            now=now,
        )
    conds = set_condition(conds, cond)
    if conds:
        status["conditions"] = conds
    return status


def _status_conds(status: DeploymentStatus) -> list[Condition]:
    return list(status.get("conditions") or [])


def timed_out(d: Obj, status: DeploymentStatus, now: float) -> bool:
    """DeploymentTimedOut."""
    if not has_deadline(d):
        return False
    cond = get_condition({"status": status}, PROGRESSING)
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    since = parse_timestamp(cond.get("lastUpdateTime"))
    deadline = int((d.get("spec") or {}).get("progressDeadlineSeconds") or 0)
    return since is not None and since + deadline < now


def rollout_status(
    d: Obj, all_sets: Sequence[Obj], new_rs: Obj | None, now: float
) -> DeploymentStatus:
    """syncRolloutStatus's new status: calculate() plus Progressing and ReplicaFailure."""
    status = calculate(d, all_sets, new_rs, now=now)
    conds = _status_conds(status)
    if not has_deadline(d):
        conds = remove_condition(conds, PROGRESSING)
    cur = next((c for c in conds if c.get("type") == PROGRESSING), None)
    complete_now = (
        status.get("replicas", 0) == status.get("updatedReplicas", 0)
        and cur is not None
        and cur.get("reason") == NEW_RS_AVAILABLE
    )
    name = new_rs["metadata"]["name"] if new_rs is not None else ""
    if has_deadline(d) and not complete_now:
        status["conditions"] = conds
        if rollout.complete(d, status):
            msg = f'ReplicaSet "{name}" has successfully progressed.'
            conds = set_condition(
                conds, condition(PROGRESSING, "True", NEW_RS_AVAILABLE, msg, now=now)
            )
        elif rollout.progressing(d, status):
            msg = f'ReplicaSet "{name}" is progressing.'
            new = condition(PROGRESSING, "True", RS_UPDATED, msg, now=now)
            if cur is not None and cur.get("status") == "True":
                new["lastTransitionTime"] = cur.get("lastTransitionTime", new["lastTransitionTime"])
            conds = [*remove_condition(conds, PROGRESSING), new]
        elif timed_out(d, status, now):
            msg = f'ReplicaSet "{name}" has timed out progressing.'
            conds = set_condition(conds, condition(PROGRESSING, "False", TIMED_OUT, msg, now=now))
    failure = None
    for rs in all_sets:
        c = get_condition(rs, REPLICA_FAILURE)
        if c is not None and c.get("status") == "True":
            failure = c
            break
    if failure is not None:
        conds = set_condition(
            conds,
            condition(
                REPLICA_FAILURE,
                "True",
                str(failure.get("reason") or ""),
                str(failure.get("message") or ""),
                now=now,
            ),
        )
    else:
        conds = remove_condition(conds, REPLICA_FAILURE)
    if conds:
        status["conditions"] = conds
    else:
        status.pop("conditions", None)
    return status


def requeue_after(d: Obj, status: DeploymentStatus, now: float) -> float | None:
    """requeueStuckDeployment: when to look again for the progress deadline."""
    cond = get_condition({"status": status}, PROGRESSING)
    if not has_deadline(d) or cond is None:
        return None
    if rollout.complete(d, status) or cond.get("reason") == TIMED_OUT:
        return None
    since = parse_timestamp(cond.get("lastUpdateTime"))
    if since is None:
        return None
    deadline = int((d.get("spec") or {}).get("progressDeadlineSeconds") or 0)
    return max(0.0, since + deadline - now) + 0.05
