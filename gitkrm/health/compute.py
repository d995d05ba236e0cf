"""health_of: the kstatus verdict of one object (pure: the cluster target uses it too)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from gitkrm.health import kinds, workloads
from gitkrm.health.expressions import HealthChecks
from gitkrm.health.fields import get_str
from gitkrm.health.generic import generic, ready_condition
from gitkrm.health.result import Health, HealthResult
from gitkrm.krm import Obj

Rule = Callable[[Obj], HealthResult]

_RULES: dict[tuple[str, str], Rule] = {
    ("apps", "Deployment"): workloads.deployment,
    ("extensions", "Deployment"): workloads.deployment,
    ("apps", "ReplicaSet"): workloads.replica_set,
    ("extensions", "ReplicaSet"): workloads.replica_set,
    ("apps", "StatefulSet"): workloads.stateful_set,
    ("apps", "DaemonSet"): workloads.daemon_set,
    ("extensions", "DaemonSet"): workloads.daemon_set,
    ("batch", "Job"): kinds.job,
    ("batch", "CronJob"): kinds.always_ready,
    ("", "PersistentVolumeClaim"): kinds.persistent_volume_claim,
    ("", "Service"): kinds.service,
    ("", "Namespace"): kinds.namespace,
    ("", "Secret"): kinds.always_ready,
    ("", "ConfigMap"): kinds.always_ready,
    ("policy", "PodDisruptionBudget"): kinds.always_ready,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): kinds.custom_resource_definition,
}


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def health_of(
    obj: Obj | None,
    *,
    now: datetime | None = None,
    deletes_itself: bool = False,
    until_complete: bool = False,
    checks: HealthChecks | None = None,
) -> HealthResult:
    """The health of an object as read from a store (None: it does not exist).

    `now` matters only for pods that cannot be scheduled (Failed after 15 seconds).
    `deletes_itself`: the object's manifest is a Job with ttlSecondsAfterFinished
    (`kinds.deletes_itself`), whose absence means it finished. `until_complete`: a Job
    or Pod that gates a phase or a wave is Current only once completed (`kinds.completed`).
    `checks`: a source's healthCheckExprs, deciding the kinds they name after kstatus'
    generic checks.
    """
    if obj is None:
        if deletes_itself:
            return kinds.JOB_GONE_AFTER_TTL
        return HealthResult(Health.NOT_FOUND, "Resource not found", "NotFound")
    if not isinstance(obj, dict):
        return HealthResult(Health.UNKNOWN, "not an object", "Malformed")
    verdict = generic(obj)
    if verdict is not None:
        return verdict
    if checks is not None and (decided := checks.verdict(obj)) is not None:
        return decided
    key = (_group(get_str(obj, "apiVersion")), get_str(obj, "kind"))
    if until_complete and key in (("batch", "Job"), ("", "Pod")):
        return kinds.completed(obj)
    if key == ("", "Pod"):
        return kinds.pod(obj, now if now is not None else datetime.now(UTC))
    rule = _RULES.get(key)
    if rule is not None:
        return rule(obj)
    return ready_condition(obj)
