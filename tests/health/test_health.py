"""kstatus rules: generic and per kind, and the aggregate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gitkrm.health import Health, aggregate, health_of
from gitkrm.health.kinds import deletes_itself

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def obj(
    api: str, kind: str, *, spec: Any = None, status: Any = None, **meta: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": api, "kind": kind, "metadata": {"name": "x", **meta}}
    if spec is not None:
        out["spec"] = spec
    if status is not None:
        out["status"] = status
    return out


def cond(kind: str, status: str, reason: str = "", message: str = "") -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def test_missing_and_generic_rules() -> None:
    assert health_of(None).status is Health.NOT_FOUND
    assert health_of(obj("v1", "ConfigMap", deletionTimestamp="2025-01-01T00:00:00Z")).status is (
        Health.TERMINATING
    )
    stale = obj("example.com/v1", "Thing", generation=2, status={"observedGeneration": 1})
    result = health_of(stale)
    assert (result.status, result.reason) == (Health.IN_PROGRESS, "LatestGenerationNotObserved")
    stalled = obj(
        "example.com/v1", "Thing", status={"conditions": [cond("Stalled", "True", "Boom", "bad")]}
    )
    assert health_of(stalled).status is Health.FAILED
    busy = obj("example.com/v1", "Thing", status={"conditions": [cond("Reconciling", "True")]})
    assert health_of(busy).status is Health.IN_PROGRESS
    not_ready = obj(
        "example.com/v1", "Thing", status={"conditions": [cond("Ready", "False", "Wait")]}
    )
    assert health_of(not_ready).status is Health.IN_PROGRESS
    assert health_of(obj("example.com/v1", "Thing")).status is Health.CURRENT


def _deployment(status: dict[str, Any], **spec: Any) -> dict[str, Any]:
    spec = {"replicas": 3, "progressDeadlineSeconds": 600, **spec}
    return obj("apps/v1", "Deployment", spec=spec, status=status, generation=1)


AVAILABLE = cond("Available", "True", "MinimumReplicasAvailable")
PROGRESSED = cond("Progressing", "True", "NewReplicaSetAvailable")
FULL = {
    "observedGeneration": 1,
    "replicas": 3,
    "updatedReplicas": 3,
    "readyReplicas": 3,
    "availableReplicas": 3,
}


@pytest.mark.parametrize(
    ("status", "want", "reason"),
    [
        ({}, Health.IN_PROGRESS, "LessReplicas"),
        ({**FULL, "updatedReplicas": 1}, Health.IN_PROGRESS, "LessUpdated"),
        ({**FULL, "replicas": 4}, Health.IN_PROGRESS, "ExtraPods"),
        ({**FULL, "availableReplicas": 2}, Health.IN_PROGRESS, "LessAvailable"),
        ({**FULL, "conditions": [AVAILABLE]}, Health.IN_PROGRESS, "ReplicaSetNotAvailable"),
        ({**FULL, "conditions": [PROGRESSED]}, Health.IN_PROGRESS, "DeploymentNotAvailable"),
        ({**FULL, "conditions": [AVAILABLE, PROGRESSED]}, Health.CURRENT, ""),
        (
            {**FULL, "conditions": [cond("Progressing", "False", "ProgressDeadlineExceeded")]},
            Health.FAILED,
            "ProgressDeadlineExceeded",
        ),
    ],
)
def test_deployment(status: dict[str, Any], want: Health, reason: str) -> None:
    result = health_of(_deployment(status))
    assert (result.status, result.reason) == (want, reason)


def test_a_refused_deployment_says_why() -> None:
    refused = 'pods "web-5d9c-x7k2q" is forbidden: exceeded quota: compute, requested: pods=1'
    failure = cond("ReplicaFailure", "True", "FailedCreate", refused)
    result = health_of(_deployment({**FULL, "replicas": 2, "conditions": [failure]}))
    assert (result.status, result.reason) == (Health.IN_PROGRESS, "ReplicaFailure")
    assert result.message == f"Replicas: 2/3: {refused}"
    rs = obj("apps/v1", "ReplicaSet", spec={"replicas": 3}, status={"conditions": [failure]})
    assert health_of(rs).message == f"Replica Failure condition: {refused}"
    # Failed stays Failed: the deadline decides, the refusal only explains.
    over = cond("Progressing", "False", "ProgressDeadlineExceeded")
    assert health_of(_deployment({"conditions": [failure, over]})).status is Health.FAILED


def test_workload_kinds() -> None:
    rs = obj(
        "apps/v1",
        "ReplicaSet",
        spec={"replicas": 2},
        status={
            "replicas": 2,
            "fullyLabeledReplicas": 2,
            "readyReplicas": 2,
            "availableReplicas": 1,
        },
    )
    assert health_of(rs).reason == "LessAvailable"
    sts = {"replicas": 2, "readyReplicas": 2, "currentReplicas": 2, "updatedReplicas": 2}
    a = obj(
        "apps/v1",
        "StatefulSet",
        spec={"replicas": 2},
        status={**sts, "currentRevision": "a", "updateRevision": "b"},
    )
    assert health_of(a).reason == "RevisionMismatch"
    b = obj(
        "apps/v1",
        "StatefulSet",
        spec={"replicas": 2},
        status={**sts, "currentRevision": "a", "updateRevision": "a"},
    )
    assert health_of(b).status is Health.CURRENT
    ds = obj(
        "apps/v1",
        "DaemonSet",
        generation=1,
        status={
            "observedGeneration": 1,
            "desiredNumberScheduled": 2,
            "currentNumberScheduled": 2,
            "updatedNumberScheduled": 2,
            "numberAvailable": 2,
            "numberReady": 1,
        },
    )
    assert health_of(ds).reason == "LessReady"
    assert health_of(obj("apps/v1", "DaemonSet", generation=1)).reason == "NoObservedGeneration"


def test_pods() -> None:
    created = (NOW - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    unsched = {"phase": "Pending", "conditions": [cond("PodScheduled", "False", "Unschedulable")]}
    young = obj("v1", "Pod", status=unsched, creationTimestamp=created)
    assert health_of(young, now=NOW).status is Health.IN_PROGRESS
    assert health_of(young, now=NOW + timedelta(seconds=20)).status is Health.FAILED
    looping = {
        "phase": "Running",
        "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
    }
    assert health_of(obj("v1", "Pod", status=looping)).status is Health.FAILED
    assert (
        health_of(
            obj("v1", "Pod", status={"phase": "Running", "conditions": [cond("Ready", "True")]})
        ).status
        is Health.CURRENT
    )
    assert health_of(obj("v1", "Pod", status={"phase": "Succeeded"})).status is Health.CURRENT
    assert health_of(obj("v1", "Pod", status={"phase": "Weird"})).status is Health.UNKNOWN


def test_jobs_claims_services_crds_namespaces() -> None:
    assert health_of(obj("batch/v1", "Job", status={})).reason == "JobNotStarted"
    failed = obj(
        "batch/v1", "Job", status={"startTime": "t", "conditions": [cond("Failed", "True")]}
    )
    assert health_of(failed).status is Health.FAILED
    assert health_of(obj("batch/v1", "Job", status={"startTime": "t"})).status is Health.CURRENT
    assert (
        health_of(obj("v1", "PersistentVolumeClaim", status={"phase": "Pending"})).reason
        == "NotBound"
    )
    assert (
        health_of(obj("v1", "PersistentVolumeClaim", status={"phase": "Bound"})).status
        is Health.CURRENT
    )
    assert health_of(obj("v1", "Service", spec={"type": "ClusterIP"})).reason == "NoIPAssigned"
    assert health_of(obj("v1", "Service", spec={"type": "ExternalName"})).status is Health.CURRENT
    assert (
        health_of(obj("v1", "Service", spec={"clusterIP": "10.96.0.10"})).status is Health.CURRENT
    )
    crd = "apiextensions.k8s.io/v1"
    assert (
        health_of(
            obj(
                crd,
                "CustomResourceDefinition",
                status={"conditions": [cond("Established", "True")]},
            )
        ).status
        is Health.CURRENT
    )
    assert (
        health_of(
            obj(
                crd,
                "CustomResourceDefinition",
                status={"conditions": [cond("NamesAccepted", "False", "Clash")]},
            )
        ).status
        is Health.FAILED
    )
    assert health_of(obj(crd, "CustomResourceDefinition")).reason == "Installing"
    assert health_of(obj("v1", "Namespace", status={"phase": "Active"})).status is Health.CURRENT


def test_aggregate() -> None:
    assert aggregate([]) is Health.CURRENT
    assert aggregate([Health.CURRENT, Health.CURRENT]) is Health.CURRENT
    assert aggregate([Health.CURRENT, Health.IN_PROGRESS]) is Health.IN_PROGRESS
    assert aggregate([Health.NOT_FOUND, Health.CURRENT]) is Health.IN_PROGRESS
    assert aggregate([Health.UNKNOWN, Health.IN_PROGRESS]) is Health.UNKNOWN
    assert aggregate([Health.UNKNOWN, Health.FAILED]) is Health.FAILED


def test_a_job_that_deletes_itself() -> None:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"ttlSecondsAfterFinished": 0, "template": {}},
    }
    assert deletes_itself(job)
    assert not deletes_itself({**job, "spec": {"template": {}}})
    assert not deletes_itself({**job, "kind": "CronJob"})
    assert not deletes_itself({**job, "apiVersion": "example.com/v1"})
    gone = health_of(None, deletes_itself=True)
    assert (gone.status, gone.reason) == (Health.CURRENT, "DeletedAfterFinished")
    assert health_of(None).status is Health.NOT_FOUND
