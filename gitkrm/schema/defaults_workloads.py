"""Defaults of workloads (apps/v1 and batch/v1 defaults.go, and the Pod strategy), the
part of defaulting that runs on every Deployment write, so it only adds absent fields."""

from __future__ import annotations

from gitkrm.krm.types import Obj
from gitkrm.schema.podspec_defaults import default_pod_spec, default_pod_template, pod_qos_class


def child_dict(parent: Obj, key: str) -> Obj | None:
    """parent[key] when it is a dict; creates `{}` when absent or null."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


def spec_of(obj: Obj) -> Obj | None:
    return child_dict(obj, "spec")


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
    strategy = child_dict(spec, "strategy")
    if strategy is not None:
        if strategy.get("type") is None:
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = child_dict(strategy, "rollingUpdate")
            if rolling is not None:
                if rolling.get("maxUnavailable") is None:
                    rolling["maxUnavailable"] = "25%"
                if rolling.get("maxSurge") is None:
                    rolling["maxSurge"] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
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


def stateful_set(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    if spec.get("podManagementPolicy") is None:
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = child_dict(spec, "updateStrategy")
    if strategy is not None:
        if strategy.get("type") is None:
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = child_dict(strategy, "rollingUpdate")
            if rolling is not None and rolling.get("partition") is None:
                rolling["partition"] = 0
    policy = child_dict(spec, "persistentVolumeClaimRetentionPolicy")
    if policy is not None:
        policy.setdefault("whenDeleted", "Retain")
        policy.setdefault("whenScaled", "Retain")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    for claim in spec.get("volumeClaimTemplates") or ():
        if isinstance(claim, dict):
            claim_spec = child_dict(claim, "spec")
            if claim_spec is not None and claim_spec.get("volumeMode") is None:
                claim_spec["volumeMode"] = "Filesystem"
            claim_status = child_dict(claim, "status")
            if claim_status is not None and claim_status.get("phase") is None:
                claim_status["phase"] = "Pending"
    template_spec(spec)


def daemon_set(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    strategy = child_dict(spec, "updateStrategy")
    if strategy is not None:
        if strategy.get("type") is None:
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = child_dict(strategy, "rollingUpdate")
            if rolling is not None:
                if rolling.get("maxUnavailable") is None:
                    rolling["maxUnavailable"] = 1
                if rolling.get("maxSurge") is None:
                    rolling["maxSurge"] = 0
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
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
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
    if spec.get("concurrencyPolicy") is None:
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
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
