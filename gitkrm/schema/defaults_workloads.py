"""Defaults of workloads (apps/v1 and batch/v1 defaults.go, and the Pod strategy), the
part of defaulting that runs on every Deployment write, so it only adds absent fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from gitkrm.krm.types import JSONScalar, Obj
from gitkrm.schema.podspec_defaults import default_pod_spec, default_pod_template, pod_qos_class

# Scalar defaults, filled in where absent (`fill`): the fields of each kind's spec and of
# its update strategy's rollingUpdate.
_DEPLOYMENT_ROLLING: Final[Mapping[str, JSONScalar]] = {"maxUnavailable": "25%", "maxSurge": "25%"}
_DEPLOYMENT: Final[Mapping[str, JSONScalar]] = {
    "revisionHistoryLimit": 10,
    "progressDeadlineSeconds": 600,
}
_STATEFUL_SET_ROLLING: Final[Mapping[str, JSONScalar]] = {"partition": 0}
_STATEFUL_SET: Final[Mapping[str, JSONScalar]] = {"replicas": 1, "revisionHistoryLimit": 10}
_DAEMON_SET_ROLLING: Final[Mapping[str, JSONScalar]] = {"maxUnavailable": 1, "maxSurge": 0}
_JOB: Final[Mapping[str, JSONScalar]] = {"completionMode": "NonIndexed", "suspend": False}
_CRON_JOB: Final[Mapping[str, JSONScalar]] = {
    "concurrencyPolicy": "Allow",
    "suspend": False,
    "successfulJobsHistoryLimit": 3,
    "failedJobsHistoryLimit": 1,
}


def child_dict(parent: Obj, key: str) -> Obj | None:
    """parent[key] when it is a dict; creates `{}` when absent or null."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


def spec_of(obj: Obj) -> Obj | None:
    return child_dict(obj, "spec")


def fill(parent: Obj, defaults: Mapping[str, JSONScalar]) -> None:
    """Set each field of `defaults` that `parent` lacks (absent or null), in their order."""
    for key, value in defaults.items():
        if parent.get(key) is None:
            parent[key] = value


def rolling_strategy(spec: Obj, key: str, rolling: Mapping[str, JSONScalar]) -> None:
    """spec[key] (an update strategy): type RollingUpdate when unset, and then the fields of
    `rolling` in its rollingUpdate."""
    strategy = child_dict(spec, key)
    if strategy is not None:
        if strategy.get("type") is None:
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            found = child_dict(strategy, "rollingUpdate")
            if found is not None:
                fill(found, rolling)


def template_spec(spec: Obj, key: str = "template") -> None:
    template = spec.get(key)
    if isinstance(template, dict):
        default_pod_template(template)


def deployment(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    rolling_strategy(spec, "strategy", _DEPLOYMENT_ROLLING)
    fill(spec, _DEPLOYMENT)
    template_spec(spec)


def replica_set(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    template_spec(spec)


def replication_controller(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    template = spec.get("template")
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    if isinstance(labels, dict) and labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = child_dict(obj, "metadata")
        if meta is not None and not meta.get("labels"):
            meta["labels"] = dict(labels)
    replica_set(obj, create)


def persistent_volume_claim(obj: Obj, create: bool) -> None:
    """A PersistentVolumeClaim, or a StatefulSet's claim template."""
    spec = spec_of(obj)
    if spec is not None and spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    status = child_dict(obj, "status")
    if status is not None and status.get("phase") is None:
        status["phase"] = "Pending"


def stateful_set(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    if spec.get("podManagementPolicy") is None:
        spec["podManagementPolicy"] = "OrderedReady"
    rolling_strategy(spec, "updateStrategy", _STATEFUL_SET_ROLLING)
    policy = child_dict(spec, "persistentVolumeClaimRetentionPolicy")
    if policy is not None:
        policy.setdefault("whenDeleted", "Retain")
        policy.setdefault("whenScaled", "Retain")
    fill(spec, _STATEFUL_SET)
    for claim in spec.get("volumeClaimTemplates") or ():
        if isinstance(claim, dict):
            persistent_volume_claim(claim, create)
    template_spec(spec)


def daemon_set(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    rolling_strategy(spec, "updateStrategy", _DAEMON_SET_ROLLING)
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    template_spec(spec)


def _job_spec(spec: Obj) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    fill(spec, _JOB)
    if spec.get("podReplacementPolicy") is None:
        failed_only = spec.get("podFailurePolicy") is not None
        spec["podReplacementPolicy"] = "Failed" if failed_only else "TerminatingOrFailed"
    template_spec(spec)


def job(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    _job_spec(spec)
    template = spec.get("template")
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    meta = child_dict(obj, "metadata")
    if isinstance(labels, dict) and labels and meta is not None and not meta.get("labels"):
        meta["labels"] = dict(labels)
    if create and spec.get("manualSelector") is not True and meta is not None:
        _generate_job_selector(spec, meta)


def _generate_job_selector(spec: Obj, meta: Obj) -> None:
    """PrepareForCreate's generateSelector: label the pods with the job's name and uid and
    select them by uid. Needs the uid, so the store admits new Jobs after assigning it."""
    uid, name = meta.get("uid"), meta.get("name")
    template = spec.get("template")
    if not uid or not isinstance(template, dict):
        return
    tmeta = child_dict(template, "metadata")
    labels = child_dict(tmeta, "labels") if tmeta is not None else None
    if labels is None:
        return
    for key in ("job-name", "batch.kubernetes.io/job-name"):
        labels.setdefault(key, name)
    for key in ("controller-uid", "batch.kubernetes.io/controller-uid"):
        labels.setdefault(key, uid)
    selector = child_dict(spec, "selector")
    match = child_dict(selector, "matchLabels") if selector is not None else None
    if match is not None:
        match.setdefault("batch.kubernetes.io/controller-uid", uid)


def cron_job(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    fill(spec, _CRON_JOB)
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict):
        job_spec = job_template.get("spec")
        if isinstance(job_spec, dict):
            template_spec(job_spec)


def pod(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    default_pod_spec(spec, pod=True)
    if create:
        # PrepareForCreate: a new Pod is Pending, with its QoS class computed once.
        status = child_dict(obj, "status")
        if status is not None:
            if not status.get("phase"):
                status["phase"] = "Pending"
            if not status.get("qosClass"):
                status["qosClass"] = pod_qos_class(spec)


def pod_template(obj: Obj, create: bool) -> None:
    template = obj.get("template")
    if isinstance(template, dict):
        default_pod_template(template)
