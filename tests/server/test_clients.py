"""The Python clients kubernetes, lightkube and kr8s against a real server: create, get,
list, patch, watch and delete."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import kr8s
import pytest
from kubernetes import client as _k8s_client
from kubernetes import config as _k8s_config
from kubernetes import watch as _k8s_watch
from lightkube import Client as LightClient
from lightkube import KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import Deployment as LkDeployment
from lightkube.resources.core_v1 import ConfigMap as LkConfigMap
from lightkube.types import PatchType

from gitkrm.server import ServerThread
from tests.server.conftest import wait_for
from tests.support.builders import deployment

# The clients' own type annotations are looser than mypy --strict; use them untyped.
k8s_client: Any = _k8s_client
k8s_config: Any = _k8s_config
k8s_watch: Any = _k8s_watch


@pytest.fixture(scope="module")
def kube(api: ServerThread) -> Iterator[Any]:
    assert api.bound is not None
    assert api.bound.kubeconfig is not None
    c = k8s_config.new_client_from_config(config_file=str(api.bound.kubeconfig))
    yield c
    c.close()


def test_kubernetes_client(kube: Any, ns: str) -> None:
    apps = k8s_client.AppsV1Api(kube)
    core = k8s_client.CoreV1Api(kube)
    created = apps.create_namespaced_deployment(ns, deployment("web", ns))
    assert created.metadata.uid
    assert created.metadata.generation == 1
    got = apps.read_namespaced_deployment("web", ns)
    assert got.spec.template.spec.containers[0].image == "nginx"
    assert got.spec.strategy.type == "RollingUpdate"  # defaulted by the server
    listed = apps.list_namespaced_deployment(ns, label_selector="app=web")
    assert [d.metadata.name for d in listed.items] == ["web"]
    patched = apps.patch_namespaced_deployment("web", ns, {"spec": {"replicas": 3}})
    assert patched.spec.replicas == 3
    scale = apps.read_namespaced_deployment_scale("web", ns)
    assert scale.spec.replicas == 3
    assert scale.status.selector == "app=web"

    events: list[tuple[str, str]] = []
    w = k8s_watch.Watch()
    rv = core.list_namespaced_config_map(ns).metadata.resource_version

    def watch() -> None:
        for ev in w.stream(
            core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=10
        ):
            events.append((ev["type"], ev["object"].metadata.name))
            if len(events) == 2:
                w.stop()

    t = threading.Thread(target=watch)
    t.start()
    core.create_namespaced_config_map(ns, {"metadata": {"name": "w"}, "data": {"a": "b"}})
    core.delete_namespaced_config_map("w", ns)
    t.join(15)
    assert events == [("ADDED", "w"), ("DELETED", "w")]

    status = apps.delete_namespaced_deployment("web", ns)
    assert status["status"] == "Success"  # the client returns delete results as dicts
    with pytest.raises(k8s_client.ApiException) as err:
        apps.read_namespaced_deployment("web", ns)
    assert err.value.status == 404


def test_lightkube(api: ServerThread, ns: str) -> None:
    assert api.bound is not None
    assert api.bound.kubeconfig is not None
    c: Any = LightClient(config=KubeConfig.from_file(str(api.bound.kubeconfig)))
    try:
        cm = LkConfigMap(metadata=ObjectMeta(name="lk", namespace=ns), data={"a": "1"})
        created = c.create(cm)
        assert created.metadata is not None
        assert created.metadata.resourceVersion
        got = c.get(LkConfigMap, "lk", namespace=ns)
        assert got.data == {"a": "1"}
        c.patch(LkConfigMap, "lk", {"data": {"b": "2"}}, namespace=ns, patch_type=PatchType.MERGE)
        c.patch(
            LkConfigMap,
            "lk",
            [{"op": "add", "path": "/data/c", "value": "3"}],
            namespace=ns,
            patch_type=PatchType.JSON,
        )
        assert c.get(LkConfigMap, "lk", namespace=ns).data == {"a": "1", "b": "2", "c": "3"}
        assert [x.metadata.name for x in c.list(LkConfigMap, namespace=ns) if x.metadata] == ["lk"]
        c.create(LkDeployment.from_dict(deployment("lkd", ns)))
        c.patch(LkDeployment, "lkd", {"spec": {"replicas": 2}}, namespace=ns)  # strategic
        assert c.get(LkDeployment, "lkd", namespace=ns).spec.replicas == 2

        seen: list[tuple[str, str]] = []

        def watch() -> None:
            for op, obj in c.watch(LkConfigMap, namespace=ns, server_timeout=10):
                assert obj.metadata is not None
                seen.append((op, str(obj.metadata.name)))
                if op == "DELETED":
                    return

        t = threading.Thread(target=watch, daemon=True)
        t.start()
        wait_for(lambda: ("ADDED", "lk") in seen)  # the current object first
        c.delete(LkConfigMap, "lk", namespace=ns)
        t.join(15)
        assert seen[-1] == ("DELETED", "lk")
    finally:
        c.close()  # its HTTP connections


def test_kr8s(api: ServerThread, ns: str) -> None:
    assert api.bound is not None
    assert api.bound.kubeconfig is not None
    k: Any = kr8s.api(kubeconfig=str(api.bound.kubeconfig))
    cm = kr8s.objects.ConfigMap(
        {"metadata": {"name": "k8", "namespace": ns}, "data": {"x": "1"}}, api=k
    )
    cm.create()
    assert cm.metadata.uid
    got = k.get("configmaps", "k8", namespace=ns)
    assert [o.name for o in got] == ["k8"]
    cm.patch({"data": {"y": "2"}})
    cm.refresh()
    assert cm.raw["data"] == {"x": "1", "y": "2"}
    listed = k.get("configmaps", namespace=ns)
    assert [o.name for o in listed] == ["k8"]

    seen: list[tuple[str, str]] = []

    def watch() -> None:
        for event, obj in k.watch("configmaps", namespace=ns):
            seen.append((event, obj.name))
            if event == "DELETED":
                return

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    wait_for(lambda: ("ADDED", "k8") in seen)
    cm.delete()
    t.join(15)
    assert seen[-1] == ("DELETED", "k8")
    with pytest.raises(kr8s.NotFoundError):
        kr8s.objects.ConfigMap.get("k8", namespace=ns, api=k)
