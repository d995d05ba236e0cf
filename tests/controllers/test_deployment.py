"""The Deployment controller against a real store, with the whole control plane running."""

from __future__ import annotations

import asyncio

from gitkrm.health import Health, health_of
from gitkrm.krm import GVK, Obj
from gitkrm.store.protocol import EventType
from gitkrm.store.sqlite import SqliteStore
from tests.controllers.conftest import (
    Start,
    condition,
    get,
    items,
    ready,
    wait_until,
)
from tests.support.builders import deployment

PODS = GVK(group="", version="v1", kind="Pod")


def rolling_update(max_surge: int, max_unavailable: int) -> dict[str, object]:
    return {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable},
    }


async def current(store: SqliteStore, name: str) -> Obj | None:
    d = await get(store, "Deployment", name, group="apps")
    return d if d is not None and health_of(d).status is Health.CURRENT else None


async def test_replica_sets_named_by_template_hash_and_status(
    store: SqliteStore, start: Start
) -> None:
    await start()
    await store.create(deployment("web", replicas=3))
    d = await wait_until(lambda: current(store, "web"), what="web Current")
    sets = await items(store, "ReplicaSet", group="apps")
    assert len(sets) == 1
    rs = sets[0]
    hash_ = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{hash_}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": hash_}
    assert rs["metadata"]["ownerReferences"][0]["uid"] == d["metadata"]["uid"]
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    status = d["status"]
    assert status["observedGeneration"] == d["metadata"]["generation"]
    assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"]) == (3, 3, 3)
    assert status["availableReplicas"] == 3
    assert condition(d, "Available")["reason"] == "MinimumReplicasAvailable"  # type: ignore[index]
    assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"  # type: ignore[index]
    pods = await items(store, "Pod")
    assert len(pods) == 3
    assert all(ready(p) for p in pods)
    assert all(p["metadata"]["name"].startswith(f"web-{hash_}-") for p in pods)


async def test_rollout_stays_within_max_surge_and_max_unavailable(
    store: SqliteStore, start: Start
) -> None:
    await start()
    await store.create(deployment("web", replicas=4, strategy=rolling_update(1, 1)))
    d = await wait_until(lambda: current(store, "web"), what="web Current")
    pods: dict[str, Obj] = {p["metadata"]["name"]: p for p in await items(store, "Pod")}
    listed = await store.list(PODS, namespace="default")
    totals: list[int] = []
    readies: list[int] = []

    async def record() -> None:
        rv = listed["metadata"]["resourceVersion"]
        async for ev in store.watch(PODS, namespace="default", resource_version=rv):
            name = ev.obj["metadata"]["name"]
            if ev.type is EventType.DELETED or ev.obj["status"].get("phase") in (
                "Succeeded",
                "Failed",
            ):
                pods.pop(name, None)
            else:
                pods[name] = ev.obj
            totals.append(len(pods))
            readies.append(sum(1 for p in pods.values() if ready(p)))

    recorder = asyncio.create_task(record())
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"
    await store.update(d)

    async def rolled() -> bool:
        d = await current(store, "web")
        if d is None or d["status"].get("observedGeneration") != 2:
            return False
        live = await items(store, "Pod")
        return len(live) == 4 and all(
            p["spec"]["containers"][0]["image"] == "nginx:1.26" and ready(p) for p in live
        )

    await wait_until(rolled, what="rollout complete")
    recorder.cancel()
    assert totals, "the rollout changed no pod"
    assert max(totals) <= 4 + 1
    assert min(readies) >= 4 - 1
    sets = await items(store, "ReplicaSet", group="apps")
    assert sorted(rs["spec"]["replicas"] for rs in sets) == [0, 4]
    new = next(rs for rs in sets if rs["spec"]["replicas"] == 4)
    assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"


async def test_recreate_removes_old_pods_before_new_ones(store: SqliteStore, start: Start) -> None:
    await start()
    await store.create(deployment("db", replicas=2, strategy={"type": "Recreate"}))
    d = await wait_until(lambda: current(store, "db"))
    images: list[set[str]] = []

    async def record() -> None:
        async for _ev in store.watch(PODS, namespace="default"):
            live = await items(store, "Pod")
            images.append({p["spec"]["containers"][0]["image"] for p in live})

    recorder = asyncio.create_task(record())
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "postgres:17"
    await store.update(d)

    async def done() -> bool:
        d = await current(store, "db")
        live = await items(store, "Pod")
        return (
            d is not None
            and d["status"].get("observedGeneration") == 2
            and len(live) == 2
            and all(p["spec"]["containers"][0]["image"] == "postgres:17" for p in live)
        )

    await wait_until(done)
    recorder.cancel()
    assert not any(len(s) > 1 for s in images), "old and new pods ran together"


async def test_revision_history_limit_deletes_old_replica_sets(
    store: SqliteStore, start: Start
) -> None:
    await start()
    await store.create(deployment("web", replicas=1, revisionHistoryLimit=1))
    for i in range(3):
        d = await wait_until(lambda: current(store, "web"))
        d["spec"]["template"]["spec"]["containers"][0]["image"] = f"nginx:2.{i}"
        await store.update(d)
        gen: int = d["metadata"]["generation"] + 1

        async def observed(g: int = gen) -> bool:
            return await _observed(store, "web", g)

        await wait_until(observed)
    await wait_until(lambda: current(store, "web"))

    async def trimmed() -> bool:
        return len(await items(store, "ReplicaSet", group="apps")) == 2

    await wait_until(trimmed, what="one old ReplicaSet kept")


async def _observed(store: SqliteStore, name: str, generation: int) -> bool:
    d = await current(store, name)
    return d is not None and d["status"].get("observedGeneration") == generation


async def test_scaling_is_not_a_rollout(store: SqliteStore, start: Start) -> None:
    await start()
    await store.create(deployment("web", replicas=2))
    d = await wait_until(lambda: current(store, "web"))
    d["spec"]["replicas"] = 5
    await store.update(d)

    async def scaled() -> bool:
        d = await current(store, "web")
        return d is not None and d["status"].get("availableReplicas") == 5

    await wait_until(scaled)
    sets = await items(store, "ReplicaSet", group="apps")
    assert len(sets) == 1
    assert sets[0]["spec"]["replicas"] == 5
    assert sets[0]["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "5"


async def test_paused_deployment_does_not_roll_out(store: SqliteStore, start: Start) -> None:
    await start()
    await store.create(deployment("web", replicas=1))
    d = await wait_until(lambda: current(store, "web"))
    d["spec"]["paused"] = True
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:9"
    await store.update(d)

    async def paused() -> Obj | None:
        d = await get(store, "Deployment", "web", group="apps")
        c = condition(d, "Progressing")
        return d if c and c["reason"] == "DeploymentPaused" and c["status"] == "Unknown" else None

    d = await wait_until(paused)
    assert len(await items(store, "ReplicaSet", group="apps")) == 1
    d["spec"]["paused"] = False
    await store.update(d)

    async def resumed() -> bool:
        return len(await items(store, "ReplicaSet", group="apps")) == 2 and bool(
            await current(store, "web")
        )

    await wait_until(resumed)


async def test_crash_looping_pods_exceed_the_progress_deadline(
    store: SqliteStore, start: Start
) -> None:
    await start()
    body = deployment("bad", replicas=2, progressDeadlineSeconds=1)
    body["spec"]["template"]["metadata"]["annotations"] = {"gitkrm.io/simulate": "crashloop"}
    await store.create(body)

    async def verdict() -> Health:
        d = await get(store, "Deployment", "bad", group="apps")
        return health_of(d).status

    assert await verdict() is Health.IN_PROGRESS

    async def failed() -> bool:
        return await verdict() is Health.FAILED

    await wait_until(failed, timeout=10, what="ProgressDeadlineExceeded")
    d = await get(store, "Deployment", "bad", group="apps")
    c = condition(d, "Progressing")
    assert c is not None
    assert (c["status"], c["reason"]) == ("False", "ProgressDeadlineExceeded")
    pods = await items(store, "Pod")
    waiting = [p["status"]["containerStatuses"][0]["state"].get("waiting", {}) for p in pods]
    assert all(w.get("reason") == "CrashLoopBackOff" for w in waiting)


async def test_scaling_during_a_stuck_rollout_is_proportional(
    store: SqliteStore, start: Start
) -> None:
    await start()
    await store.create(deployment("web", replicas=4, strategy=rolling_update(1, 0)))
    d = await wait_until(lambda: current(store, "web"))
    d["spec"]["template"]["metadata"]["annotations"] = {"gitkrm.io/simulate": "crashloop"}
    await store.update(d)

    async def stuck() -> list[Obj] | None:
        sets = await items(store, "ReplicaSet", group="apps")
        return sets if len(sets) == 2 and all(rs["spec"]["replicas"] > 0 for rs in sets) else None

    before = await wait_until(stuck, what="two active ReplicaSets")
    assert sum(rs["spec"]["replicas"] for rs in before) == 5
    d = await get(store, "Deployment", "web", group="apps")
    assert d is not None
    d["spec"]["replicas"] = 8
    await store.update(d)

    async def scaled() -> list[Obj] | None:
        sets = await items(store, "ReplicaSet", group="apps")
        notes = {
            rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"]
            for rs in sets
        }
        return sets if notes == {"8"} else None

    after = {rs["metadata"]["name"]: rs["spec"]["replicas"] for rs in await wait_until(scaled)}
    old = {rs["metadata"]["name"]: rs["spec"]["replicas"] for rs in before}
    assert sum(after.values()) == 8 + 1  # replicas + maxSurge
    assert all(after[name] >= old[name] for name in old)
