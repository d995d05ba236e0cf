"""API-server rules a schema cannot express, with kube's field paths and messages."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import Cause, Invalid
from gitkrm.schema import Registry
from tests.schema.schema_objects import deployment, pod_spec, service


def causes_of(registry: Registry, obj: dict[str, Any]) -> list[Cause]:
    with pytest.raises(Invalid) as e:
        registry.admit(obj)
    return list(e.value.causes)


def by_field(causes: list[Cause]) -> dict[str, Cause]:
    return {c.field: c for c in causes}


def test_selector_must_match_template_labels(registry: Registry) -> None:
    obj = deployment()
    obj["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    cause = by_field(causes_of(registry, obj))["spec.template.metadata.labels"]
    assert cause.message == (
        'Invalid value: {"app":"other"}: `selector` does not match template `labels`'
    )


def test_selector_with_expressions(registry: Registry) -> None:
    obj = deployment()
    obj["spec"]["selector"] = {
        "matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]
    }
    registry.admit(obj)
    obj = deployment()
    obj["spec"]["selector"] = {
        "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]
    }
    assert "spec.template.metadata.labels" in by_field(causes_of(registry, obj))


def test_selector_required_and_non_empty(registry: Registry) -> None:
    obj = deployment()
    del obj["spec"]["selector"]
    assert by_field(causes_of(registry, obj))["spec.selector"].type == "FieldValueRequired"
    obj = deployment()
    obj["spec"]["selector"] = {}
    cause = by_field(causes_of(registry, obj))["spec.selector"]
    assert cause.message.endswith("empty selector is invalid for deployment")


@pytest.mark.parametrize("kind", ["ReplicaSet", "StatefulSet", "DaemonSet"])
def test_other_workloads_check_their_selector(registry: Registry, kind: str) -> None:
    obj = deployment()
    obj["kind"] = kind
    obj["spec"].pop("replicas") if kind == "DaemonSet" else None
    obj["spec"]["template"]["metadata"]["labels"] = {"app": "nope"}
    assert "spec.template.metadata.labels" in by_field(causes_of(registry, obj))


def test_duplicate_container_names_including_init(registry: Registry) -> None:
    obj = deployment()
    spec = pod_spec(obj)
    spec["initContainers"] = [{"name": "web", "image": "busybox"}]
    spec["containers"].append({"name": "web", "image": "nginx"})
    causes = causes_of(registry, obj)
    dups = [c for c in causes if c.type == "FieldValueDuplicate"]
    assert [c.field for c in dups] == [
        "spec.template.spec.containers[0].name",
        "spec.template.spec.containers[1].name",
    ]
    assert dups[0].message == 'Duplicate value: "web"'


def test_container_name_must_be_dns_label(registry: Registry) -> None:
    obj = deployment()
    pod_spec(obj)["containers"][0]["name"] = "Web_1"
    cause = by_field(causes_of(registry, obj))["spec.template.spec.containers[0].name"]
    assert cause.message.startswith('Invalid value: "Web_1": a lowercase RFC 1123 label')


def test_containers_required_and_image_required(registry: Registry) -> None:
    obj = deployment()
    pod_spec(obj)["containers"] = []
    assert "spec.template.spec.containers" in by_field(causes_of(registry, obj))
    obj = deployment()
    del pod_spec(obj)["containers"][0]["image"]
    cause = by_field(causes_of(registry, obj))["spec.template.spec.containers[0].image"]
    assert cause.type == "FieldValueRequired"


def test_container_ports(registry: Registry) -> None:
    obj = deployment()
    pod_spec(obj)["containers"][0]["ports"] = [
        {"containerPort": 70000, "name": "http"},
        {"containerPort": 81, "name": "http"},
        {"containerPort": 82, "name": "Bad--name-that-is-long"},
        {"containerPort": 83, "hostPort": 0, "protocol": "ICMP"},
    ]
    causes = by_field(causes_of(registry, obj))
    base = "spec.template.spec.containers[0].ports"
    assert causes[f"{base}[0].containerPort"].message == (
        "Invalid value: 70000: must be between 1 and 65535, inclusive"
    )
    assert causes[f"{base}[1].name"].type == "FieldValueDuplicate"
    name_messages = [c.message for c in causes_of(registry, obj) if c.field == f"{base}[2].name"]
    assert any("must be no more than 15 characters" in m for m in name_messages)
    assert any("must not contain consecutive hyphens" in m for m in name_messages)
    assert causes[f"{base}[3].protocol"].message == (
        'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'
    )


def test_quantities_and_requests_within_limits(registry: Registry) -> None:
    obj = deployment()
    pod_spec(obj)["containers"][0]["resources"] = {
        "requests": {"cpu": "2", "memory": "12XB"},
        "limits": {"cpu": "500m", "nvidia": "1"},
    }
    causes = by_field(causes_of(registry, obj))
    base = "spec.template.spec.containers[0].resources"
    assert causes[f"{base}.requests[cpu]"].message == (
        'Invalid value: "2": must be less than or equal to cpu limit of 500m'
    )
    assert (
        "quantities must match the regular expression" in causes[f"{base}.requests[memory]"].message
    )
    assert causes[f"{base}.limits[nvidia]"].message.endswith(
        "must be a standard resource for containers"
    )


def test_replicas_non_negative(registry: Registry) -> None:
    cause = by_field(causes_of(registry, deployment(replicas=-1)))["spec.replicas"]
    assert cause.message == "Invalid value: -1: must be greater than or equal to 0"


def test_deployment_restart_policy_must_be_always(registry: Registry) -> None:
    obj = deployment()
    pod_spec(obj)["restartPolicy"] = "Never"
    cause = by_field(causes_of(registry, obj))["spec.template.spec.restartPolicy"]
    assert cause.message == 'Unsupported value: "Never": supported values: "Always"'


def test_rolling_update_parameters(registry: Registry) -> None:
    obj = deployment(
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}
    )
    cause = by_field(causes_of(registry, obj))["spec.strategy.rollingUpdate.maxUnavailable"]
    assert cause.message.endswith("may not be 0 when `maxSurge` is 0")
    obj = deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "150%"}})
    cause = by_field(causes_of(registry, obj))["spec.strategy.rollingUpdate.maxSurge"]
    assert cause.message.endswith("must not be greater than 100%")
    obj = deployment(strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}})
    assert by_field(causes_of(registry, obj))["spec.strategy.rollingUpdate"].type == (
        "FieldValueForbidden"
    )


def test_volume_mount_must_name_a_volume(registry: Registry) -> None:
    obj = deployment()
    pod_spec(obj)["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    cause = by_field(causes_of(registry, obj))[
        "spec.template.spec.containers[0].volumeMounts[0].name"
    ]
    assert cause.message == 'Not found: "data"'
    pod_spec(obj)["volumes"] = [{"name": "data", "emptyDir": {}}]
    registry.admit(obj)


def test_job_needs_restart_policy_never_or_on_failure(registry: Registry) -> None:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }
    cause = by_field(causes_of(registry, job))["spec.template.spec.restartPolicy"]
    assert cause.message == 'Required value: valid values: "OnFailure", "Never"'
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    registry.admit(job)


def test_cronjob_schedule_and_name_length(registry: Registry) -> None:
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "c" * 53, "namespace": "default"},
        "spec": {
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [{"name": "c", "image": "busybox"}],
                        }
                    }
                }
            }
        },
    }
    causes = by_field(causes_of(registry, cron))
    assert causes["spec.schedule"].type == "FieldValueRequired"
    assert causes["metadata.name"].message.endswith("must be no more than 52 characters")


def test_service_ports(registry: Registry) -> None:
    obj = service(ports=[{"port": 80}, {"port": 0, "name": "b"}, {"port": 443, "name": "b"}])
    causes = by_field(causes_of(registry, obj))
    assert causes["spec.ports[0].name"].type == "FieldValueRequired"
    assert causes["spec.ports[1].port"].message == (
        "Invalid value: 0: must be between 1 and 65535, inclusive"
    )
    assert causes["spec.ports[2].name"].type == "FieldValueDuplicate"


def test_service_target_port_range_and_name(registry: Registry) -> None:
    obj = service(ports=[{"port": 80, "targetPort": 70000}])
    assert "spec.ports[0].targetPort" in by_field(causes_of(registry, obj))
    obj = service(ports=[{"port": 80, "targetPort": "-http"}])
    assert "spec.ports[0].targetPort" in by_field(causes_of(registry, obj))


def test_service_name_is_a_dns1035_label(registry: Registry) -> None:
    obj = service(name="1web")
    cause = by_field(causes_of(registry, obj))["metadata.name"]
    assert "DNS-1035 label" in cause.message


def test_config_map_keys(registry: Registry) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default"},
        "data": {"good.key": "1", "bad key": "2", "dup": "x"},
        "binaryData": {"dup": "eA=="},
    }
    causes = by_field(causes_of(registry, cm))
    assert causes["data[bad key]"].message.startswith(
        'Invalid value: "bad key": a valid config key must consist of alphanumeric characters'
    )
    assert "duplicate of key present in data" in causes["binaryData[dup]"].message


def test_tls_secret_requires_its_keys(registry: Registry) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "tls", "namespace": "default"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "eA=="},
    }
    assert by_field(causes_of(registry, secret))["data[tls.key]"].type == "FieldValueRequired"


def test_metadata_is_validated(registry: Registry) -> None:
    obj = deployment()
    obj["metadata"]["labels"] = {"bad key!": "x"}
    del obj["metadata"]["namespace"]
    causes = by_field(causes_of(registry, obj))
    assert causes["metadata.namespace"].type == "FieldValueRequired"
    assert "metadata.labels" in causes


def test_template_labels_are_validated(registry: Registry) -> None:
    obj = deployment()
    obj["spec"]["template"]["metadata"]["labels"]["bad key!"] = "x"
    assert "spec.template.metadata.labels" in by_field(causes_of(registry, obj))


def test_status_subresource_skips_spec_rules(registry: Registry) -> None:
    obj = deployment()
    pod_spec(obj)["containers"][0]["name"] = "web"
    obj["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    old = deployment()
    registry.admit(old)
    registry.admit(obj, old=old, subresource="status")


def test_pvc_needs_access_modes_and_storage(registry: Registry) -> None:
    pvc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteSometimes"], "resources": {"requests": {}}},
    }
    causes = by_field(causes_of(registry, pvc))
    assert causes["spec.accessModes"].type == "FieldValueNotSupported"
    assert causes["spec.resources[storage]"].type == "FieldValueRequired"


def test_hpa_bounds(registry: Registry) -> None:
    hpa: dict[str, Any] = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 3,
            "maxReplicas": 2,
        },
    }
    cause = by_field(causes_of(registry, hpa))["spec.maxReplicas"]
    assert cause.message.endswith("must be greater than or equal to `minReplicas`")


def test_pdb_min_and_max_exclusive(registry: Registry) -> None:
    pdb: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": 1, "maxUnavailable": 1, "selector": {"matchLabels": {"a": "b"}}},
    }
    assert by_field(causes_of(registry, pdb))["spec"].message.endswith(
        "minAvailable and maxUnavailable cannot be both set"
    )


def test_statefulset_mounts_may_name_claim_templates(registry: Registry) -> None:
    sts = deployment()
    sts["kind"] = "StatefulSet"
    pod_spec(sts)["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    sts["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    ]
    registry.admit(sts)
    sts["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    assert "spec.template.metadata.labels" in by_field(causes_of(registry, sts))
