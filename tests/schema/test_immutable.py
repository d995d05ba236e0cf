"""Immutable fields: rejected as Invalid on update, as the API server does."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import Invalid
from gitkrm.schema import Registry
from tests.schema.schema_objects import clone, deployment, service
from tests.support.builders import claim


def update_causes(registry: Registry, old: dict[str, Any], new: dict[str, Any]) -> dict[str, str]:
    registry.admit(old)
    with pytest.raises(Invalid) as e:
        registry.admit(new, old=old)
    return {c.field: c.message for c in e.value.causes}


def changed(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `obj` with the field at the dotted `path` set to `value`."""
    new = clone(obj)
    *parents, last = path.split(".")
    field = new
    for key in parents:
        field = field[key]
    field[last] = value
    return new


def select_also(workload: dict[str, Any], label: str, value: str) -> None:
    """Add a label to a workload's selector and to its pod template alike (still matching)."""
    workload["spec"]["selector"]["matchLabels"][label] = value
    workload["spec"]["template"]["metadata"]["labels"][label] = value


def test_metadata_name_namespace_uid(registry: Registry) -> None:
    old = deployment()
    old["metadata"]["uid"] = "u1"
    new = clone(old)
    new["metadata"].update(name="other", namespace="elsewhere", uid="u2")
    new["spec"]["selector"]["matchLabels"] = {"app": "web"}
    causes = update_causes(registry, old, new)
    assert causes["metadata.name"] == 'Invalid value: "other": field is immutable'
    assert "metadata.namespace" in causes
    assert "metadata.uid" in causes


def test_uid_only_compared_when_both_set(registry: Registry) -> None:
    old = deployment()
    old["metadata"]["uid"] = "u1"
    registry.admit(old)
    new = clone(old)
    del new["metadata"]["uid"]
    registry.admit(new, old=old)


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "DaemonSet"])
def test_workload_selector(registry: Registry, kind: str) -> None:
    old = deployment()
    old["kind"] = kind
    if kind == "DaemonSet":
        del old["spec"]["replicas"]
    new = clone(old)
    select_also(new, "tier", "web")
    causes = update_causes(registry, old, new)
    assert causes["spec.selector"].endswith("field is immutable")


def test_statefulset_spec_beyond_the_mutable_fields(registry: Registry) -> None:
    old = deployment()
    old["kind"] = "StatefulSet"
    old["spec"]["serviceName"] = "web"
    new = clone(old)
    new["spec"]["replicas"] = 4
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    registry.admit(old)
    registry.admit(clone(new), old=old)
    new["spec"]["serviceName"] = "other"
    select_also(new, "tier", "web")
    causes = update_causes(registry, old, new)
    assert causes["spec"].startswith("Forbidden: updates to statefulset spec for fields other")


def test_changing_replicas_and_image_is_allowed(registry: Registry) -> None:
    old = deployment()
    registry.admit(old)
    new = clone(old)
    new["spec"]["replicas"] = 5
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    registry.admit(new, old=old)


def _job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"job": "j"}},
            "manualSelector": True,
            "template": {
                "metadata": {"labels": {"job": "j"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "a:1"}]},
            },
        },
    }


def test_job_template_and_selector(registry: Registry) -> None:
    old = _job()
    new = clone(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "a:2"
    select_also(new, "x", "y")
    causes = update_causes(registry, old, new)
    assert causes["spec.template"].endswith("field is immutable")
    assert causes["spec.selector"].endswith("field is immutable")


def test_service_cluster_ip(registry: Registry) -> None:
    old = service(clusterIP="10.0.0.10", clusterIPs=["10.0.0.10"])
    new = clone(old)
    new["spec"]["clusterIP"] = "10.0.0.11"
    new["spec"]["clusterIPs"] = ["10.0.0.11"]
    causes = update_causes(registry, old, new)
    assert causes["spec.clusterIPs[0]"] == 'Invalid value: ["10.0.0.11"]: may not change once set'


def test_service_update_without_cluster_ip_keeps_the_allocated_one(registry: Registry) -> None:
    old = service(clusterIP="10.0.0.10", clusterIPs=["10.0.0.10"], type="NodePort")
    old["spec"]["ports"][0]["nodePort"] = 30080
    registry.admit(old)
    new = service(type="NodePort")
    registry.admit(new, old=old)
    assert new["spec"]["clusterIP"] == "10.0.0.10"
    assert new["spec"]["clusterIPs"] == ["10.0.0.10"]
    assert new["spec"]["ipFamilies"] == ["IPv4"]
    assert new["spec"]["ports"][0]["nodePort"] == 30080


def test_service_cluster_ip_may_be_set_when_unset(registry: Registry) -> None:
    old = service()
    registry.admit(old)
    registry.admit(changed(old, "spec.clusterIP", "10.0.0.10"), old=old)


STORAGE = "spec.resources.requests.storage"


def test_bound_pvc_spec_except_storage_request(registry: Registry) -> None:
    old = claim(volumeName="pv-1")
    old["status"] = {"phase": "Bound"}
    registry.admit(old)
    registry.admit(changed(old, STORAGE, "2Gi"), old=old)
    causes = update_causes(registry, old, changed(old, "spec.accessModes", ["ReadWriteMany"]))
    assert causes["spec"].startswith("Forbidden: spec is immutable after creation")
    causes = update_causes(registry, old, changed(old, STORAGE, "512Mi"))
    assert causes["spec.resources.requests.storage"] == (
        "Forbidden: field can not be less than previous value"
    )


def test_unbound_pvc_gets_its_volume_name_once(registry: Registry) -> None:
    old = claim()
    registry.admit(old)
    bound = changed(old, "spec.volumeName", "pv-1")
    registry.admit(bound, old=old)
    assert "spec" in update_causes(registry, old, changed(old, STORAGE, "2Gi"))
    assert "spec" in update_causes(registry, bound, changed(bound, "spec.volumeName", "pv-2"))


def _config_map(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default"},
        "data": {"a": "1"},
        **fields,
    }


def test_immutable_config_map(registry: Registry) -> None:
    old = _config_map(immutable=True)
    new = clone(old)
    new["data"]["a"] = "2"
    new["immutable"] = False
    causes = update_causes(registry, old, new)
    assert causes["data"] == "Forbidden: field is immutable when `immutable` is set"
    assert causes["immutable"] == "Forbidden: field is immutable when `immutable` is set"


def test_mutable_config_map_may_become_immutable(registry: Registry) -> None:
    old = _config_map()
    registry.admit(old)
    new = clone(old)
    new["immutable"] = True
    new["data"]["a"] = "2"
    registry.admit(new, old=old)


def test_immutable_secret_and_its_type(registry: Registry) -> None:
    old = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        "immutable": True,
        "data": {"a": "YQ=="},
    }
    new = clone(old)
    new["stringData"] = {"a": "changed"}
    new["type"] = "kubernetes.io/basic-auth"
    causes = update_causes(registry, old, new)
    assert "data" in causes
    assert causes["type"] == 'Invalid value: "kubernetes.io/basic-auth": field is immutable'
