"""PatchMeta for real built-in kinds, read from the schemas kubernetes-validate ships.

The merge keys that matter in practice, and the behaviour a GitOps re-apply depends on:
others' additions survive, tolerations are replaced whole, and an unchanged manifest
against a defaulted live object is a no-op.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from benchmarks.workload import deployment, service
from gitkrm.patch import (
    PatchMeta,
    apply_strategic_merge_patch,
    create_three_way_merge_patch,
    semantically_equal,
)

SCHEMA_FILE = (
    Path(kubernetes_validate.__file__).parent
    / "kubernetes-json-schema"
    / "v1.33.0-local"
    / "_definitions.json"
)


@cache
def definitions() -> dict[str, Any]:
    defs: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())["$defs"]
    return defs


def meta(kind: str) -> PatchMeta:
    return PatchMeta.from_openapi(definitions(), kind)


DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"
SERVICE = "io.k8s.api.core.v1.Service"
POD = "io.k8s.api.core.v1.Pod"
CONFIGMAP = "io.k8s.api.core.v1.ConfigMap"


def pod_spec(m: PatchMeta) -> PatchMeta:
    return m.field("spec").sub.field("template").sub.field("spec").sub


def test_pod_spec_merge_keys() -> None:
    spec = meta(POD).field("spec").sub
    containers = spec.field("containers")
    assert containers.strategy == "merge"
    assert containers.merge_key is not None
    assert containers.merge_key.names == ("name",)
    container = containers.sub
    assert container.field("env").merge_key.names == ("name",)  # type: ignore[union-attr]
    assert container.field("ports").merge_key.names == ("containerPort",)  # type: ignore[union-attr]
    assert container.field("volumeMounts").merge_key.names == ("mountPath",)  # type: ignore[union-attr]
    volumes = spec.field("volumes")
    assert volumes.strategy == "merge"
    assert volumes.retain_keys
    assert volumes.merge_key.names == ("name",)  # type: ignore[union-attr]
    tolerations = spec.field("tolerations")
    assert tolerations.strategy == ""
    assert tolerations.merge_key is None
    assert container.field("args").strategy == ""


def test_deployment_and_service_metas() -> None:
    spec = pod_spec(meta(DEPLOYMENT))
    assert spec.field("containers").merge_key.names == ("name",)  # type: ignore[union-attr]
    assert meta(DEPLOYMENT).field("spec").sub.field("strategy").retain_keys
    ports = meta(SERVICE).field("spec").sub.field("ports")
    assert ports.strategy == "merge"
    assert ports.merge_key.names == ("port",)  # type: ignore[union-attr]


def test_quantities_are_recorded_only_where_the_schema_says() -> None:
    container = pod_spec(meta(DEPLOYMENT)).field("containers").sub
    requests = container.field("resources").sub.field("requests")
    assert requests.shape == "map"
    assert requests.sub.field("cpu").quantity
    assert requests.sub.field("anything").quantity
    assert not container.field("image").quantity
    data = meta(CONFIGMAP).field("data")
    assert not data.sub.field("cpu").quantity


def test_metas_are_cached_per_schema_node() -> None:
    a = pod_spec(meta(DEPLOYMENT)).field("containers").sub
    b = meta(POD).field("spec").sub.field("containers").sub
    assert a is b
    assert pod_spec(meta(DEPLOYMENT)).field("containers") is pod_spec(meta(DEPLOYMENT)).field(
        "containers"
    )


def live_deployment(desired: dict[str, Any]) -> dict[str, Any]:
    """`desired` as the API server returns it: defaults, status, managed fields."""
    live = copy.deepcopy(desired)
    md = live["metadata"]
    md.update(
        uid="0b3b9f4e-1",
        resourceVersion="123",
        generation=1,
        creationTimestamp="2024-01-01T00:00:00Z",
        annotations={"deployment.kubernetes.io/revision": "1"},
        managedFields=[{"manager": "gitkrm", "operation": "Update", "fieldsV1": {"f:spec": {}}}],
    )
    spec = live["spec"]
    spec.update(
        revisionHistoryLimit=10,
        progressDeadlineSeconds=600,
        strategy={
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
        },
    )
    pod = spec["template"]["spec"]
    pod.update(
        restartPolicy="Always",
        terminationGracePeriodSeconds=30,
        dnsPolicy="ClusterFirst",
        schedulerName="default-scheduler",
        securityContext={},
    )
    for c in pod["containers"]:
        c.update(
            imagePullPolicy="IfNotPresent",
            terminationMessagePath="/dev/termination-log",
            terminationMessagePolicy="File",
        )
        for p in c.get("ports", []):
            p.setdefault("protocol", "TCP")
    live["status"] = {"replicas": 3, "readyReplicas": 3, "observedGeneration": 1}
    return live


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return result


def test_unchanged_manifest_against_defaulted_live_object_is_a_noop() -> None:
    desired = deployment(7)
    live = live_deployment(desired)
    m = meta(DEPLOYMENT)
    assert create_three_way_merge_patch(desired, desired, live, m) == {}


def test_quantities_normalised_by_the_server_are_not_changes() -> None:
    desired = deployment(7)
    containers(desired)[0]["resources"] = {
        "requests": {"cpu": 0.5, "memory": "1024Mi"},
        "limits": {"cpu": 1},
    }
    live = live_deployment(desired)
    containers(live)[0]["resources"] = {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"cpu": "1"},
    }
    m = meta(DEPLOYMENT)
    assert create_three_way_merge_patch(desired, desired, live, m) == {}
    exact = create_three_way_merge_patch(desired, desired, live, m, semantic=False)
    assert exact != {}


def test_quantity_text_in_configmap_data_is_a_change() -> None:
    desired = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    desired["data"] = {"cpu": "0.5"}
    live = {**desired, "data": {"cpu": "500m"}}
    patch = create_three_way_merge_patch(desired, desired, live, meta(CONFIGMAP))
    assert patch == {"data": {"cpu": "0.5"}}


def test_injected_sidecar_survives_a_reapply() -> None:
    desired = deployment(3)
    live = live_deployment(desired)
    sidecar = {"name": "istio-proxy", "image": "proxy:1", "args": ["run"]}
    containers(live).append(sidecar)
    m = meta(DEPLOYMENT)

    assert create_three_way_merge_patch(desired, desired, live, m) == {}

    changed = copy.deepcopy(desired)
    containers(changed)[0]["image"] = "nginx:2"
    patch = create_three_way_merge_patch(desired, changed, live, m)
    result = apply_strategic_merge_patch(live, patch, m)
    names = [c["name"] for c in containers(result)]
    assert names == ["web", "istio-proxy"]
    assert containers(result)[0]["image"] == "nginx:2"
    assert containers(result)[1] == sidecar
    # Go-exact mode reaches the same object.
    exact = create_three_way_merge_patch(desired, changed, live, m, semantic=False)
    assert apply_strategic_merge_patch(live, exact, m) == result


def test_env_and_ports_merge_by_key_and_others_additions_survive() -> None:
    desired = deployment(1)
    live = live_deployment(desired)
    containers(live)[0]["env"].append({"name": "INJECTED", "value": "1"})
    containers(live)[0]["ports"].append({"containerPort": 9090, "protocol": "TCP"})
    changed = copy.deepcopy(desired)
    containers(changed)[0]["env"][0]["value"] = "staging"
    containers(changed)[0]["ports"][0]["name"] = "http"
    m = meta(DEPLOYMENT)
    result = apply_strategic_merge_patch(
        live, create_three_way_merge_patch(desired, changed, live, m), m
    )
    c = containers(result)[0]
    assert c["env"] == [
        {"name": "MODE", "value": "staging"},
        {"name": "IDX", "value": "1"},
        {"name": "INJECTED", "value": "1"},
    ]
    assert c["ports"] == [
        {"containerPort": 80, "protocol": "TCP", "name": "http"},
        {"containerPort": 9090, "protocol": "TCP"},
    ]


def test_removing_a_container_port_and_env_deletes_only_those() -> None:
    desired = deployment(1)
    containers(desired)[0]["volumeMounts"] = [
        {"name": "a", "mountPath": "/a"},
        {"name": "b", "mountPath": "/b"},
    ]
    live = live_deployment(desired)
    changed = copy.deepcopy(desired)
    del containers(changed)[0]["env"][1]
    containers(changed)[0]["volumeMounts"] = [{"name": "b", "mountPath": "/b"}]
    m = meta(DEPLOYMENT)
    result = apply_strategic_merge_patch(
        live, create_three_way_merge_patch(desired, changed, live, m), m
    )
    c = containers(result)[0]
    assert c["env"] == [{"name": "MODE", "value": "prod"}]
    assert c["volumeMounts"] == [{"name": "b", "mountPath": "/b"}]
    assert c["imagePullPolicy"] == "IfNotPresent"


def test_tolerations_are_replaced_whole() -> None:
    desired = deployment(2)
    pod = desired["spec"]["template"]["spec"]
    pod["tolerations"] = [{"key": "a", "operator": "Exists"}]
    live = live_deployment(desired)
    live["spec"]["template"]["spec"]["tolerations"].append({"key": "extra", "operator": "Exists"})
    changed = copy.deepcopy(desired)
    changed["spec"]["template"]["spec"]["tolerations"] = [{"key": "b", "operator": "Exists"}]
    m = meta(DEPLOYMENT)
    patch = create_three_way_merge_patch(desired, changed, live, m)
    assert patch["spec"]["template"]["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]
    result = apply_strategic_merge_patch(live, patch, m)
    assert result["spec"]["template"]["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]


def test_service_ports_merge_by_port() -> None:
    desired = service(4)
    live = copy.deepcopy(desired)
    live["spec"].update(clusterIP="10.0.0.4", type="ClusterIP", sessionAffinity="None")
    live["spec"]["ports"][0]["protocol"] = "TCP"
    m = meta(SERVICE)
    assert create_three_way_merge_patch(desired, desired, live, m) == {}
    changed = copy.deepcopy(desired)
    changed["spec"]["ports"].append({"port": 443, "targetPort": 8443})
    result = apply_strategic_merge_patch(
        live, create_three_way_merge_patch(desired, changed, live, m), m
    )
    assert result["spec"]["ports"] == [
        {"port": 80, "targetPort": 80, "protocol": "TCP"},
        {"port": 443, "targetPort": 8443},
    ]
    assert result["spec"]["clusterIP"] == "10.0.0.4"


def test_volumes_retain_keys_switches_the_volume_source() -> None:
    desired = deployment(5)
    desired["spec"]["template"]["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    live = live_deployment(desired)
    changed = copy.deepcopy(desired)
    changed["spec"]["template"]["spec"]["volumes"] = [
        {"name": "data", "hostPath": {"path": "/srv"}}
    ]
    m = meta(DEPLOYMENT)
    result = apply_strategic_merge_patch(
        live, create_three_way_merge_patch(desired, changed, live, m), m
    )
    assert result["spec"]["template"]["spec"]["volumes"] == [
        {"name": "data", "hostPath": {"path": "/srv"}}
    ]


def test_semantic_equality_on_a_deployment() -> None:
    m = meta(DEPLOYMENT)
    a = deployment(1)
    b = copy.deepcopy(a)
    containers(b)[0]["resources"]["requests"]["cpu"] = 0.1
    b["metadata"]["annotations"] = {}
    assert semantically_equal(a, b, m)
    containers(b)[0]["image"] = "other"
    assert not semantically_equal(a, b, m)


@pytest.mark.parametrize("name", [DEPLOYMENT, SERVICE, POD])
def test_meta_of_every_field_resolves_lazily(name: str) -> None:
    """Walking the whole schema (recursion included) terminates and is cached."""
    seen: set[int] = set()

    def walk(pm: PatchMeta, depth: int) -> None:
        if id(pm) in seen or depth > 40:
            return
        seen.add(id(pm))
        for key in list(pm._props):
            walk(pm.field(key).sub, depth + 1)

    walk(meta(name), 0)
    assert len(seen) > 20
