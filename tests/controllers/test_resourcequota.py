"""The resource-quota controller on a real store: `status.hard` mirrors `spec.hard`,
`status.used` follows pods as they come, finish and go, and a ReplicaSet whose pods a quota
refuses says so (ReplicaFailure, FailedCreate, kube-apiserver's "exceeded quota" message),
the Deployment with it, until the quota is raised."""

from __future__ import annotations

from typing import Any

from gitkrm.krm import Obj
from gitkrm.krm.conditions import get_condition
from gitkrm.store.sqlite import SqliteStore
from tests.controllers.conftest import Start, failing_replica_set, get, ref, wait_until
from tests.support.builders import deployment


def quota(name: str, **hard: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"hard": hard},
    }


def pod(name: str, cpu: str) -> Obj:
    resources = {"requests": {"cpu": cpu, "memory": "64Mi"}, "limits": {"cpu": cpu}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "web", "image": "nginx:1", "resources": resources}]},
    }


def used_is(store: SqliteStore, name: str, want: dict[str, str]) -> Any:
    async def check() -> bool:
        q = await get(store, "ResourceQuota", name)
        return q is not None and (q.get("status") or {}).get("used") == want

    return check


async def test_status_follows_pods(store: SqliteStore, start: Start) -> None:
    # No kubelet: a pod stays as it was created (its phase is set by the test).
    await start(enabled=["resourcequota"])
    await store.create(
        quota("compute", pods="4", **{"requests.cpu": "2", "requests.memory": "1Gi"})
    )
    await wait_until(
        used_is(store, "compute", {"pods": "0", "requests.cpu": "0", "requests.memory": "0"}),
        what="the first count",
    )
    q = await get(store, "ResourceQuota", "compute")
    assert q is not None
    assert q["status"]["hard"] == {"pods": "4", "requests.cpu": "2", "requests.memory": "1Gi"}
    await store.create(pod("a", "500m"))
    await store.create(pod("b", "250m"))
    want = {"pods": "2", "requests.cpu": "750m", "requests.memory": "128Mi"}
    await wait_until(used_is(store, "compute", want), what="two pods counted")
    done = await store.get(ref("Pod", "a"))
    done["status"] = {**done.get("status", {}), "phase": "Succeeded"}
    await store.update_status(done)
    want = {"pods": "1", "requests.cpu": "250m", "requests.memory": "64Mi"}
    await wait_until(used_is(store, "compute", want), what="a Succeeded pod not counted")
    await store.delete(ref("Pod", "b"))
    want = {"pods": "0", "requests.cpu": "0", "requests.memory": "0"}
    await wait_until(used_is(store, "compute", want), what="a deleted pod not counted")


async def test_object_counts(store: SqliteStore, start: Start) -> None:
    await start(enabled=["resourcequota"])
    await store.create(
        quota("objects", configmaps="5", **{"count/deployments.apps": "3", "secrets": "2"})
    )
    await store.create(deployment("web"))
    await store.create(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}}
    )
    want = {"configmaps": "0", "count/deployments.apps": "1", "secrets": "1"}
    await wait_until(used_is(store, "objects", want), what="deployments and secrets counted")


async def test_a_counted_kind_is_followed(store: SqliteStore, start: Start) -> None:
    """A kind no evaluator tracks, named by `count/<resource>.<group>`: a delete of one is
    counted at once, not at the next resync."""
    manager = await start(enabled=["resourcequota"])
    name = "count/ingresses.networking.k8s.io"
    await store.create(quota("ingresses", **{name: "2"}))
    await wait_until(used_is(store, "ingresses", {name: "0"}), what="the first count")
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}},
    }
    await store.create(ingress)
    await wait_until(used_is(store, "ingresses", {name: "1"}), what="the ingress charged")
    controller = manager.controller("resourcequota")

    async def settled() -> bool:
        """Nothing left to recount: the quota's last version seen and worked on."""
        live = await store.get(ref("ResourceQuota", "ingresses"))
        seen = controller.quotas.get("default", "ingresses")  # type: ignore[attr-defined]
        version = seen["metadata"]["resourceVersion"] if seen is not None else None
        return version == live["metadata"]["resourceVersion"] and controller.queue.idle

    await wait_until(settled, what="the charge's recount done")
    await store.delete(ref("Ingress", "web", group="networking.k8s.io"))
    await wait_until(used_is(store, "ingresses", {name: "0"}), what="the delete counted")


async def test_a_refused_replica_set_reports_failed_create(
    store: SqliteStore, start: Start
) -> None:
    await start()
    await store.create(quota("pods", pods="2"))
    await wait_until(used_is(store, "pods", {"pods": "0"}), what="the quota counted")
    await store.create(deployment("web", replicas=3, image="nginx:1"))

    rs = await wait_until(lambda: failing_replica_set(store), what="a ReplicaFailure condition")
    cond = get_condition(rs, "ReplicaFailure")
    assert cond is not None
    assert cond.get("reason") == "FailedCreate"
    prefix = rs["metadata"]["name"]
    message = str(cond.get("message"))
    assert message.startswith(f'pods "{prefix}-'), message
    assert message.endswith(
        '" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2'
    ), message

    async def deployment_failure() -> object:
        d = await get(store, "Deployment", "web", group="apps")
        c = get_condition(d, "ReplicaFailure") if d is not None else None
        return c if c is not None and c.get("reason") == "FailedCreate" else None

    await wait_until(deployment_failure, what="the Deployment's ReplicaFailure")
    raised = await store.get(ref("ResourceQuota", "pods"))
    raised["spec"]["hard"]["pods"] = "3"
    await store.update(raised)

    async def recovered() -> bool:
        d = await get(store, "Deployment", "web", group="apps")
        if d is None or (d.get("status") or {}).get("replicas") != 3:
            return False
        return get_condition(d, "ReplicaFailure") is None

    await wait_until(recovered, timeout=20, what="three replicas once the quota is raised")
