"""ReplicaSets, StatefulSets, DaemonSets, Jobs and CronJobs with the control plane running."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from gitkrm.controllers.cronjob import trigger_of
from gitkrm.krm import Obj
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
from tests.support.builders import deployment


def _template(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def _workload(kind: str, name: str, **spec: Any) -> Obj:
    """An apps/v1 workload of `kind` whose (busybox) pods are labelled and selected `app: name`."""
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": _template(name), **spec},
    }


def _claim_spec(**spec: Any) -> dict[str, Any]:
    """A PersistentVolumeClaim's spec: one ReadWriteOnce volume of 1Gi."""
    return {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec}


async def test_a_deleted_pod_is_replaced(store: SqliteStore, start: Start) -> None:
    await start()
    await store.create(deployment("web", replicas=2))

    async def two_ready() -> list[Obj] | None:
        pods = await items(store, "Pod")
        return pods if len(pods) == 2 and all(ready(p) for p in pods) else None

    pods = await wait_until(two_ready)
    victim = pods[0]["metadata"]["name"]
    await store.delete(ref("Pod", victim))

    async def replaced() -> bool:
        pods = await two_ready()
        return pods is not None and victim not in {p["metadata"]["name"] for p in pods}

    await wait_until(replaced)


async def test_replica_set_scales_down_unready_pods_first(store: SqliteStore, start: Start) -> None:
    await start()
    await store.create(_workload("ReplicaSet", "rs", replicas=3))

    async def count(n: int) -> bool:
        got = await get(store, "ReplicaSet", "rs", group="apps")
        return got is not None and (got.get("status") or {}).get("readyReplicas") == n

    await wait_until(lambda: count(3))
    got = await get(store, "ReplicaSet", "rs", group="apps")
    assert got is not None
    got["spec"]["replicas"] = 1
    await store.update(got)
    await wait_until(lambda: count(1))
    assert len(await items(store, "Pod")) == 1


async def test_stateful_set_creates_pods_and_bound_claims_in_order(
    store: SqliteStore, start: Start
) -> None:
    await start()
    data = [{"metadata": {"name": "data"}, "spec": _claim_spec()}]
    sts = _workload("StatefulSet", "db", replicas=3, serviceName="db", volumeClaimTemplates=data)
    await store.create(sts)
    created: list[str] = []

    async def all_ready() -> bool:
        for p in await items(store, "Pod"):
            if p["metadata"]["name"] not in created:
                created.append(p["metadata"]["name"])
        got = await get(store, "StatefulSet", "db", group="apps")
        return got is not None and (got.get("status") or {}).get("readyReplicas") == 3

    await wait_until(all_ready, what="3 ready pods")
    assert created == ["db-0", "db-1", "db-2"]
    claims = {c["metadata"]["name"]: c for c in await items(store, "PersistentVolumeClaim")}
    assert sorted(claims) == ["data-db-0", "data-db-1", "data-db-2"]
    assert all(c["status"]["phase"] == "Bound" for c in claims.values())
    pod = await get(store, "Pod", "db-1")
    assert pod is not None
    vols = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert vols["data"]["persistentVolumeClaim"]["claimName"] == "data-db-1"
    pod0 = await get(store, "Pod", "db-0")
    pod2 = await get(store, "Pod", "db-2")
    assert pod0 is not None
    assert pod2 is not None
    c0, c2 = condition(pod0, "Ready"), condition(pod2, "Ready")
    assert c0 is not None
    assert c2 is not None
    assert c0["lastTransitionTime"] <= c2["lastTransitionTime"]
    got = await get(store, "StatefulSet", "db", group="apps")
    assert got is not None
    assert got["status"]["currentRevision"] == got["status"]["updateRevision"]
    volumes = await items(store, "PersistentVolume", namespace=None)
    assert {v["spec"]["claimRef"]["name"] for v in volumes} == set(claims)


async def test_claim_of_unknown_class_stays_pending(store: SqliteStore, start: Start) -> None:
    await start()
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": _claim_spec(storageClassName="nope"),
    }
    await store.create(claim)

    async def pending() -> bool:
        got = await get(store, "PersistentVolumeClaim", "c")
        return got is not None and (got.get("status") or {}).get("phase") == "Pending"

    await wait_until(pending)
    assert await items(store, "PersistentVolume", namespace=None) == []
    classes = await items(store, "StorageClass", namespace=None, group="storage.k8s.io")
    assert [c["metadata"]["name"] for c in classes] == ["standard"]


async def test_daemon_set_runs_one_pod_per_eligible_node(store: SqliteStore, start: Start) -> None:
    await start(node_count=3)
    nodes = await items(store, "Node", namespace=None)
    tainted = nodes[0]
    tainted["spec"]["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    await store.update(tainted)
    await store.create(_workload("DaemonSet", "agent"))

    async def settled() -> Obj | None:
        got = await get(store, "DaemonSet", "agent", group="apps")
        st = (got or {}).get("status") or {}
        return got if st.get("numberReady") == 2 and st.get("desiredNumberScheduled") == 2 else None

    await wait_until(settled)
    pods = await items(store, "Pod")
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(
        n["metadata"]["name"] for n in nodes[1:]
    )


def _job(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            },
            **spec,
        },
    }


async def test_job_completes(store: SqliteStore, start: Start) -> None:
    await start()
    await store.create(_job("once", completions=3, parallelism=2))

    async def complete() -> Obj | None:
        got = await get(store, "Job", "once", group="batch")
        c = condition(got, "Complete")
        return got if c and c["status"] == "True" else None

    got = await wait_until(complete)
    assert got["status"]["succeeded"] == 3
    assert condition(got, "SuccessCriteriaMet") is not None
    assert got["status"].get("completionTime")
    pods = await items(store, "Pod")
    assert len(pods) == 3
    assert all(p["status"]["phase"] == "Succeeded" for p in pods)


async def test_job_fails_after_backoff_limit(store: SqliteStore, start: Start) -> None:
    await start()
    body = _job("bad", backoffLimit=1)
    body["spec"]["template"]["metadata"] = {"annotations": {"gitkrm.io/simulate": "fail"}}
    await store.create(body)

    async def failed() -> Obj | None:
        got = await get(store, "Job", "bad", group="batch")
        c = condition(got, "Failed")
        return got if c and c["status"] == "True" else None

    got = await wait_until(failed)
    assert condition(got, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    assert got["status"]["failed"] == 2


async def test_cron_job_creates_the_job_that_is_due(store: SqliteStore, start: Start) -> None:
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": "default"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": _job("x")["spec"]}},
    }
    created = await store.create(cron)
    past = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 150))
    await store.update_status({**created, "status": {"lastScheduleTime": past}})
    await start()

    async def job() -> list[Obj]:
        return await items(store, "Job", group="batch")

    jobs = await wait_until(job)
    assert jobs[0]["metadata"]["name"].startswith("tick-")
    assert jobs[0]["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert trigger_of(cron).get_next_fire_time(None, datetime.now(UTC)) is not None
