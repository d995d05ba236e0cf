"""Scheduling, the node simulator, services, garbage collection and namespaces."""

from __future__ import annotations

from gitkrm.controllers.kubelet import image_ref
from gitkrm.controllers.node import parse_capacity
from gitkrm.krm import Obj
from gitkrm.store.protocol import Propagation
from gitkrm.store.sqlite import SqliteStore
from tests.controllers.conftest import (
    Start,
    condition,
    get,
    items,
    ready,
    ref,
    wait_until,
)
from tests.support.builders import configmap, deployment, namespace


def _pod(name: str, **spec: object) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


async def _unschedulable(store: SqliteStore, name: str) -> str | None:
    pod = await get(store, "Pod", name)
    c = condition(pod, "PodScheduled")
    if c and c["status"] == "False" and c["reason"] == "Unschedulable":
        return str(c["message"])
    return None


async def test_default_nodes_with_status_and_heartbeat_leases(
    store: SqliteStore, start: Start
) -> None:
    await start(node_count=2)
    nodes = await items(store, "Node", namespace=None)
    assert [n["metadata"]["name"] for n in nodes] == ["gitkrm-node-0", "gitkrm-node-1"]
    await wait_until(lambda: _all_ready(store))
    leases = await wait_until(
        lambda: items(store, "Lease", namespace="kube-node-lease", group="coordination.k8s.io")
    )
    first = {lease["metadata"]["name"]: lease["spec"]["renewTime"] for lease in leases}

    async def renewed() -> bool:
        now = await items(store, "Lease", namespace="kube-node-lease", group="coordination.k8s.io")
        return all(lease["spec"]["renewTime"] > first[lease["metadata"]["name"]] for lease in now)

    await wait_until(renewed, what="leases renewed")


async def _all_ready(store: SqliteStore) -> bool:
    nodes = await items(store, "Node", namespace=None)
    return bool(nodes) and all((condition(n, "Ready") or {}).get("status") == "True" for n in nodes)


async def test_scheduler_honours_selectors_taints_and_capacity(
    store: SqliteStore, start: Start
) -> None:
    await start(node_count=2)
    await wait_until(lambda: _all_ready(store))
    n0 = await get(store, "Node", "gitkrm-node-0", namespace=None)
    assert n0 is not None
    n0["metadata"]["labels"]["disk"] = "ssd"
    n0["spec"]["taints"] = [{"key": "team", "value": "a", "effect": "NoSchedule"}]
    await store.update(n0)
    await store.create(_pod("picky", nodeSelector={"disk": "ssd"}))
    await store.create(
        _pod(
            "tolerant",
            nodeSelector={"disk": "ssd"},
            tolerations=[{"key": "team", "operator": "Equal", "value": "a"}],
        )
    )
    huge = _pod("huge")
    huge["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "5000"}}
    await store.create(huge)
    message = await wait_until(lambda: _unschedulable(store, "picky"))
    assert "untolerated taint {team: a}" in message
    assert "didn't match Pod's node affinity/selector" in message
    assert "Insufficient cpu" in await wait_until(lambda: _unschedulable(store, "huge"))

    async def bound() -> Obj | None:
        pod = await get(store, "Pod", "tolerant")
        return pod if pod and pod["spec"].get("nodeName") else None

    assert (await wait_until(bound))["spec"]["nodeName"] == "gitkrm-node-0"
    # Removing the taint makes room: the unschedulable pod is tried again.
    n0 = await get(store, "Node", "gitkrm-node-0", namespace=None)
    assert n0 is not None
    n0["spec"]["taints"] = []
    await store.update(n0)

    async def picky_bound() -> bool:
        pod = await get(store, "Pod", "picky")
        return bool(pod and pod["spec"].get("nodeName") == "gitkrm-node-0")

    await wait_until(picky_bound)


async def test_simulated_failures(store: SqliteStore, start: Start) -> None:
    await start()
    for name, mode in (("loop", "crashloop"), ("boom", "fail"), ("stuck", "pending")):
        body = _pod(name)
        body["metadata"]["annotations"] = {"gitkrm.io/simulate": mode}
        await store.create(body)

    async def restarted() -> bool:
        pod = await get(store, "Pod", "loop")
        statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or []
        return bool(statuses) and statuses[0]["restartCount"] >= 3

    await wait_until(restarted, what="crash loop restarts")
    loop = await get(store, "Pod", "loop")
    assert loop is not None
    assert loop["status"]["phase"] == "Running"
    assert not ready(loop)
    assert (
        loop["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    )

    async def failed() -> bool:
        pod = await get(store, "Pod", "boom")
        return bool(pod and pod["status"].get("phase") == "Failed")

    await wait_until(failed)
    assert "gitkrm.io/simulate: pending" in await wait_until(lambda: _unschedulable(store, "stuck"))


async def test_service_ip_endpoints_and_load_balancer(store: SqliteStore, start: Start) -> None:
    await start(load_balancer_pool="192.0.2.10-192.0.2.11")
    await store.create(deployment("web", replicas=2))
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "type": "LoadBalancer",
            "selector": {"app": "web"},
            "ports": [{"port": 80, "targetPort": 80}],
        },
    }
    await store.create(svc)

    async def endpoints() -> Obj | None:
        ep = await get(store, "Endpoints", "web")
        subsets = (ep or {}).get("subsets") or []
        return ep if subsets and len(subsets[0].get("addresses") or []) == 2 else None

    ep = await wait_until(endpoints)
    pods = {p["status"]["podIP"] for p in await items(store, "Pod")}
    assert {a["ip"] for a in ep["subsets"][0]["addresses"]} == pods
    assert ep["subsets"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    slices = await items(store, "EndpointSlice", group="discovery.k8s.io")
    assert len(slices) == 1
    assert slices[0]["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
    assert {e["addresses"][0] for e in slices[0]["endpoints"]} == pods
    assert all(e["conditions"]["ready"] for e in slices[0]["endpoints"])

    async def lb() -> Obj | None:
        got = await get(store, "Service", "web")
        ingress = (((got or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress")
        return got if ingress else None

    got = await wait_until(lb)
    assert got["spec"]["clusterIP"].startswith("10.")
    assert got["status"]["loadBalancer"]["ingress"][0]["ip"] == "192.0.2.10"
    assert all(p.get("nodePort", 0) >= 30000 for p in got["spec"]["ports"])


async def test_garbage_collection_policies(store: SqliteStore, start: Start) -> None:
    await start()

    async def pods(n: int) -> bool:
        got = await items(store, "Pod")
        return len(got) == n and all(ready(p) for p in got)

    # Background: the Deployment goes, then its ReplicaSet and pods.
    await store.create(deployment("bg", replicas=2))
    await wait_until(lambda: pods(2))
    await store.delete(ref("Deployment", "bg", group="apps"), propagation=Propagation.BACKGROUND)

    async def empty() -> bool:
        return not await items(store, "Pod") and not await items(store, "ReplicaSet", group="apps")

    await wait_until(empty, what="background cascade")
    # Orphan: the ReplicaSet and pods stay, without their owner reference.
    await store.create(deployment("or", replicas=1))
    await wait_until(lambda: pods(1))
    await store.delete(ref("Deployment", "or", group="apps"), propagation=Propagation.ORPHAN)

    async def orphaned() -> bool:
        sets = await items(store, "ReplicaSet", group="apps")
        gone = await get(store, "Deployment", "or", group="apps") is None
        return gone and len(sets) == 1 and not sets[0]["metadata"].get("ownerReferences")

    await wait_until(orphaned, what="orphaned ReplicaSet")
    assert len(await items(store, "Pod")) == 1
    rs = (await items(store, "ReplicaSet", group="apps"))[0]
    await store.delete(ref("ReplicaSet", rs["metadata"]["name"], group="apps"))
    await wait_until(lambda: pods(0))
    # Foreground: the owner stays (with its finalizer) until the dependents are gone.
    await store.create(deployment("fg", replicas=2))
    await wait_until(lambda: pods(2))
    marked = await store.delete(
        ref("Deployment", "fg", group="apps"), propagation=Propagation.FOREGROUND
    )
    assert "foregroundDeletion" in marked["metadata"]["finalizers"]

    async def fg_done() -> bool:
        return await get(store, "Deployment", "fg", group="apps") is None

    await wait_until(fg_done, what="foreground deletion")
    assert not await items(store, "Pod")
    assert not await items(store, "ReplicaSet", group="apps")


async def test_deleting_a_namespace_removes_its_content(store: SqliteStore, start: Start) -> None:
    await start()
    await store.create(namespace("team"))
    await store.create(deployment("web", "team", replicas=2))
    await store.create(configmap("cfg", "team"))

    async def running() -> bool:
        return len(await items(store, "Pod", namespace="team")) == 2

    await wait_until(running)
    await store.delete(ref("Namespace", "team", namespace=None))

    async def gone() -> bool:
        return await get(store, "Namespace", "team", namespace=None) is None

    await wait_until(gone, what="namespace removed")
    for kind, group in (
        ("Pod", ""),
        ("ConfigMap", ""),
        ("Deployment", "apps"),
        ("ReplicaSet", "apps"),
    ):
        assert await items(store, kind, namespace="team", group=group) == []


def test_helpers() -> None:
    assert parse_capacity("cpu=4, memory=16Gi,bad") == {"cpu": "4", "memory": "16Gi"}
    assert image_ref("nginx") == "docker.io/library/nginx:latest"
    assert image_ref("bitnami/redis:7") == "docker.io/bitnami/redis:7"
    assert image_ref("ghcr.io/x/y@sha256:ab") == "ghcr.io/x/y@sha256:ab"


def test_the_crash_loop_back_off_doubles_to_its_cap_and_never_overflows() -> None:
    from gitkrm.controllers.kubelet import crash_backoff

    assert [crash_backoff(n, base=10, most=300) for n in (1, 2, 3, 5, 6)] == [10, 20, 40, 160, 300]
    assert crash_backoff(5000, base=10, most=300) == 300  # was OverflowError after ~1000
