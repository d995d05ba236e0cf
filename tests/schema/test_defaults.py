"""Built-in defaults as a real 1.33 cluster fills them in; defaulting is idempotent."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.schema import Registry
from gitkrm.schema.defaults import apply_defaults
from gitkrm.schema.podspec_defaults import image_tag
from tests.schema.schema_objects import clone, deployment, pod_spec, service


def test_deployment_defaults(registry: Registry) -> None:
    obj = deployment()
    del obj["spec"]["replicas"]
    registry.admit(obj)
    spec = obj["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert spec["revisionHistoryLimit"] == 10
    assert spec["progressDeadlineSeconds"] == 600
    pod = pod_spec(obj)
    assert pod["restartPolicy"] == "Always"
    assert pod["dnsPolicy"] == "ClusterFirst"
    assert pod["schedulerName"] == "default-scheduler"
    assert pod["terminationGracePeriodSeconds"] == 30
    assert pod["securityContext"] == {}
    container = pod["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_explicit_values_are_kept(registry: Registry) -> None:
    obj = deployment(replicas=0, strategy={"type": "Recreate"})
    registry.admit(obj)
    assert obj["spec"]["replicas"] == 0
    assert obj["spec"]["strategy"] == {"type": "Recreate"}


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("localhost:5000/nginx", "Always"),
        ("localhost:5000/nginx:1", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
        ("nginx:latest@sha256:" + "a" * 64, "Always"),
    ],
)
def test_image_pull_policy(registry: Registry, image: str, policy: str) -> None:
    obj = deployment()
    pod_spec(obj)["containers"][0]["image"] = image
    registry.admit(obj)
    assert pod_spec(obj)["containers"][0]["imagePullPolicy"] == policy


def test_image_tag() -> None:
    assert image_tag("registry.example.com:443/team/app") == "latest"
    assert image_tag("app:v2") == "v2"


def test_service_defaults(registry: Registry) -> None:
    obj = service()
    registry.admit(obj)
    spec = obj["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["ipFamilies"] == ["IPv4"]
    assert "externalTrafficPolicy" not in spec


def test_node_port_and_load_balancer_services(registry: Registry) -> None:
    obj = service(type="LoadBalancer")
    registry.admit(obj)
    assert obj["spec"]["externalTrafficPolicy"] == "Cluster"
    assert obj["spec"]["allocateLoadBalancerNodePorts"] is True


def test_job_defaults(registry: Registry) -> None:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once", "namespace": "default"},
        "spec": {
            "template": {
                "metadata": {"labels": {"job": "once"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "a:1"}]},
            }
        },
    }
    registry.admit(job)
    spec = job["spec"]
    assert spec["backoffLimit"] == 6
    assert spec["completions"] == 1
    assert spec["parallelism"] == 1
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert job["metadata"]["labels"] == {"job": "once"}


def test_parallel_job_keeps_completions_unset() -> None:
    job: dict[str, Any] = {"spec": {"parallelism": 3}}
    apply_defaults(job, group="batch", kind="Job", create=True)
    assert "completions" not in job["spec"]
    assert job["spec"]["parallelism"] == 3


def test_secret_type_and_string_data(registry: Registry) -> None:
    secret: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        "data": {"a": "YQ==", "b": "old"},
        "stringData": {"b": "bee", "c": "sea"},
    }
    registry.admit(secret)
    assert secret["type"] == "Opaque"
    assert "stringData" not in secret
    assert secret["data"] == {"a": "YQ==", "b": "YmVl", "c": "c2Vh"}


def test_namespace_finalizer_and_phase_on_create(registry: Registry) -> None:
    ns: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    registry.admit(ns)
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["status"] == {"phase": "Active"}


def test_statefulset_and_daemonset_defaults(registry: Registry) -> None:
    sts = deployment()
    sts["kind"] = "StatefulSet"
    registry.admit(sts)
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": 0},
    }
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    ds = deployment()
    ds["kind"] = "DaemonSet"
    del ds["spec"]["replicas"]
    registry.admit(ds)
    assert ds["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": 0}
    assert ds["spec"]["revisionHistoryLimit"] == 10


def test_probe_and_volume_defaults(registry: Registry) -> None:
    obj = deployment()
    pod = pod_spec(obj)
    pod["volumes"] = [{"name": "cfg", "configMap": {"name": "cfg"}}, {"name": "scratch"}]
    pod["containers"][0]["livenessProbe"] = {"httpGet": {"port": 80}}
    registry.admit(obj)
    assert pod["volumes"] == [
        {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}},
        {"name": "scratch", "emptyDir": {}},
    ]
    assert pod["containers"][0]["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }


def test_pod_requests_default_to_limits(registry: Registry) -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "a:1", "resources": {"limits": {"cpu": "1"}}}]
        },
    }
    registry.admit(pod)
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    assert pod["spec"]["enableServiceLinks"] is True


@pytest.mark.parametrize("make", [deployment, service])
def test_defaulting_is_idempotent(registry: Registry, make: Any) -> None:
    obj = make()
    registry.admit(obj)
    once = clone(obj)
    registry.admit(obj)
    assert obj == once


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "100m"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}, "Burstable"),
        ({"limits": {"cpu": "1"}}, "Burstable"),
    ],
)
def test_new_pod_is_pending_with_its_qos_class(
    registry: Registry, resources: dict[str, Any], qos: str
) -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "a:1", "resources": resources}]},
    }
    registry.admit(pod)
    assert pod["status"] == {"phase": "Pending", "qosClass": qos}


def test_job_selector_is_generated_from_the_uid(registry: Registry) -> None:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once", "namespace": "default", "uid": "u-1"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "a:1"}]}
            }
        },
    }
    registry.admit(job)
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}
    assert job["spec"]["template"]["metadata"]["labels"] == {
        "job-name": "once",
        "batch.kubernetes.io/job-name": "once",
        "controller-uid": "u-1",
        "batch.kubernetes.io/controller-uid": "u-1",
    }
