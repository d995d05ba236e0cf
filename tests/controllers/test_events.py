"""Events the bundled controllers record, against a real store with the control plane
running: kube-controller-manager's and kube-scheduler's reasons and messages, the fields
client-go's recorders write, and the correlation of repeats."""

from __future__ import annotations

import re
import time
from typing import Any

from gitkrm.controllers.eventttl import EventExpiry
from gitkrm.krm import Obj, ObjectRef
from gitkrm.krm.clock import VirtualClock, format_seconds
from gitkrm.store.events import EventRecorder, Style
from gitkrm.store.sqlite import SqliteStore
from tests.controllers.conftest import Start, get, items, wait_until
from tests.support.builders import deployment


async def events_of(store: SqliteStore, obj: Obj, reason: str | None = None) -> list[Obj]:
    """The core/v1 Events about `obj` (by uid), oldest first."""
    md = obj["metadata"]
    found = [
        e
        for e in await items(store, "Event", md.get("namespace") or "default")
        if e["involvedObject"].get("uid") == md["uid"] and (reason is None or e["reason"] == reason)
    ]
    return sorted(found, key=lambda e: e["metadata"]["name"])


async def test_a_rollout_records_kube_controller_manager_events(
    store: SqliteStore, start: Start
) -> None:
    await start()
    await store.create(deployment("web", replicas=3))

    async def rolled_out() -> Any:
        d = await get(store, "Deployment", "web", group="apps")
        pods = await items(store, "Pod")
        if d is None or len(pods) != 3 or (d.get("status") or {}).get("readyReplicas") != 3:
            return None
        sets = await items(store, "ReplicaSet", group="apps")
        created = await events_of(store, sets[0], "SuccessfulCreate")
        scheduled = [e for p in pods for e in await events_of(store, p, "Scheduled")]
        return (d, sets[0], pods) if len(created) == 3 and len(scheduled) == 3 else None

    d, rs, pods = await wait_until(rolled_out, what="web rolled out, its events written")
    rs_name = rs["metadata"]["name"]
    assert re.fullmatch(r"web-[a-z0-9]+", rs_name)

    (scaled,) = await events_of(store, d, "ScalingReplicaSet")
    assert scaled["message"] == f"Scaled up replica set {rs_name} from 0 to 3"
    assert scaled["type"] == "Normal"
    assert scaled["count"] == 1
    assert scaled["source"] == {"component": "deployment-controller"}
    assert scaled["reportingComponent"] == "deployment-controller"
    assert scaled["firstTimestamp"] == scaled["lastTimestamp"]
    assert re.fullmatch(r"web\.[0-9a-f]{16}", scaled["metadata"]["name"])
    involved = scaled["involvedObject"]
    assert involved["kind"] == "Deployment"
    assert involved["apiVersion"] == "apps/v1"
    assert (involved["namespace"], involved["name"]) == ("default", "web")
    assert involved["resourceVersion"]

    created = await events_of(store, rs, "SuccessfulCreate")
    assert sorted(e["message"] for e in created) == sorted(
        f"Created pod: {p['metadata']['name']}" for p in pods
    )
    assert {e["source"]["component"] for e in created} == {"replicaset-controller"}

    for pod in pods:
        (ev,) = await events_of(store, pod, "Scheduled")
        md = pod["metadata"]
        assert (
            ev["message"]
            == f"Successfully assigned default/{md['name']} to {pod['spec']['nodeName']}"
        )
        # kube-scheduler writes through events.k8s.io: eventTime, action, no source
        assert ev["reportingComponent"] == "default-scheduler"
        assert ev["reportingInstance"].startswith("default-scheduler-")
        assert ev["action"] == "Binding"
        assert ev["eventTime"]
        assert "firstTimestamp" not in ev
        assert ev["source"] == {}


async def test_scaling_down_records_the_deletes(store: SqliteStore, start: Start) -> None:
    await start()
    await store.create(deployment("web", replicas=3))
    await wait_until(lambda: len_pods(store, 3), what="three pods")
    d = await get(store, "Deployment", "web", group="apps")
    assert d is not None
    web = ObjectRef(group="apps", kind="Deployment", name="web", namespace="default")
    await store.patch(web, {"spec": {"replicas": 1}}, "merge")

    async def scaled_down() -> Any:
        sets = await items(store, "ReplicaSet", group="apps")
        deleted = await events_of(store, sets[0], "SuccessfulDelete")
        downs = [
            e for e in await events_of(store, d, "ScalingReplicaSet") if "down" in e["message"]
        ]
        return (sets[0], deleted, downs) if len(deleted) == 2 and downs else None

    rs, deleted, downs = await wait_until(scaled_down, what="the scale-down events")
    assert downs[0]["message"] == f"Scaled down replica set {rs['metadata']['name']} from 3 to 1"
    assert all(
        re.fullmatch(r"Deleted pod: web-[a-z0-9]+-[a-z0-9]{5}", e["message"]) for e in deleted
    )


async def len_pods(store: SqliteStore, n: int) -> bool:
    return len(await items(store, "Pod")) == n


async def test_job_and_cronjob_events(store: SqliteStore, start: Start) -> None:
    await start()
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}],
        }
    }
    job = await store.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "once", "namespace": "default"},
            "spec": {"template": template},
        }
    )

    async def job_done() -> Any:
        done = await events_of(store, job, "Completed")
        return done if done else None

    (completed,) = await wait_until(job_done, what="the Job's Completed event")
    assert completed["message"] == "Job completed"
    assert completed["source"] == {"component": "job-controller"}
    (created,) = await events_of(store, job, "SuccessfulCreate")
    assert re.fullmatch(r"Created pod: once-[a-z0-9]{5}", created["message"])

    cj = await store.create(
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "tick", "namespace": "default"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}},
        }
    )
    # The next minute may be a minute away: a last schedule a minute ago makes the latest
    # minute boundary due now.
    a_minute_ago = format_seconds(time.time() - 60)
    await store.update_status({**cj, "status": {"lastScheduleTime": a_minute_ago}})

    async def cron_events() -> Any:
        made = await events_of(store, cj, "SuccessfulCreate")
        saw = await events_of(store, cj, "SawCompletedJob")
        return (made, saw) if made and saw else None

    made, saw = await wait_until(cron_events, timeout=20, what="the CronJob's events")
    job_name = made[0]["message"].removeprefix("Created job ")
    assert re.fullmatch(r"tick-\d+", job_name)
    assert saw[0]["message"] == f"Saw completed job: {job_name}, condition: Complete"
    assert saw[0]["source"] == {"component": "cronjob-controller"}


async def test_statefulset_events(store: SqliteStore, start: Start) -> None:
    await start()
    sts = await store.create(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "db", "image": "postgres"}]},
                },
            },
        }
    )

    async def both() -> Any:
        found = await events_of(store, sts, "SuccessfulCreate")
        return found if len(found) == 2 else None

    found = await wait_until(both, what="two StatefulSet events")
    assert [e["message"] for e in found] == [
        "create Pod db-0 in StatefulSet db successful",
        "create Pod db-1 in StatefulSet db successful",
    ]
    assert found[0]["source"] == {"component": "statefulset-controller"}


# -- the recorder alone: correlation ---------------------------------------------------------


def _pod(name: str = "p", uid: str = "u-1") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "7"},
    }


async def test_repeats_aggregate_into_count(store: SqliteStore) -> None:
    clock = VirtualClock(start=1_800_000_000.0)
    recorder = EventRecorder(store=store, clock=clock, ttl=3600)
    sink = recorder.sink("replicaset-controller")
    pod = _pod()
    sink.warning(pod, "FailedCreate", "Error creating: quota")
    await recorder.flush()
    clock.advance(clock.time() + 30)
    sink.warning(pod, "FailedCreate", "Error creating: quota")
    sink.warning(pod, "FailedCreate", "Error creating: quota")
    sink.warning(pod, "FailedCreate", "Error creating: other")  # another message: its own
    await recorder.flush()

    evs = await items(store, "Event")
    by_msg = {e["message"]: e for e in evs}
    assert len(evs) == 2
    quota = by_msg["Error creating: quota"]
    assert quota["count"] == 3
    assert quota["firstTimestamp"] == "2027-01-15T08:00:00Z"
    assert quota["lastTimestamp"] == "2027-01-15T08:00:30Z"
    assert quota["type"] == "Warning"
    assert by_msg["Error creating: other"]["count"] == 1

    # The stored Event went away (expired): the next repeat writes it again, with its count.
    await store.expire_events(now=clock.time() + 7200, ttl=3600, limit=1000)
    assert await items(store, "Event") == []
    sink.warning(pod, "FailedCreate", "Error creating: quota")
    await recorder.flush()
    (again,) = await items(store, "Event")
    assert again["count"] == 4
    assert again["metadata"]["name"] == quota["metadata"]["name"]


async def test_series_style_counts_in_series(store: SqliteStore) -> None:
    clock = VirtualClock(start=1_800_000_000.0)
    recorder = EventRecorder(store=store, clock=clock)
    sink = recorder.sink("default-scheduler", style=Style.SERIES)
    for _ in range(3):
        sink.warning(_pod(), "FailedScheduling", "0/3 nodes are available", action="Scheduling")
    await recorder.stop()
    (ev,) = await items(store, "Event")
    assert ev["series"]["count"] == 3
    assert ev["eventTime"] == "2027-01-15T08:00:00.000000Z"
    assert "count" not in ev


async def test_a_recorder_turned_off_records_nothing(store: SqliteStore) -> None:
    recorder = EventRecorder(store=store, enabled=False)
    recorder.sink("x").normal(_pod(), "R", "m")
    await recorder.stop()
    assert await items(store, "Event") == []


# -- expiry on the controllers' clock ---------------------------------------------------------


async def test_events_expire_on_the_injected_clock(store: SqliteStore) -> None:
    clock = VirtualClock(start=1_800_000_000.0)
    recorder = EventRecorder(store=store, clock=clock, ttl=600)
    expiry = EventExpiry(store=store, ttl=600, limit=1000, clock=clock)
    expiry.start()
    try:
        recorder.sink("job-controller").normal(_pod(), "Completed", "Job completed")
        await recorder.flush()
        assert len(await items(store, "Event")) == 1
        clock.advance(clock.time() + 300)  # a sweep at 50 s intervals: not due yet
        await wait_until(lambda: expiry.interval and clock.next_due(), what="the sweep re-armed")
        assert len(await items(store, "Event")) == 1
        clock.advance(clock.time() + 301)
        await wait_until(
            lambda: expiry.expired == 1 and clock.next_due() is not None,
            what="the event expired",
        )
        assert await items(store, "Event") == []
    finally:
        await expiry.stop()


async def test_without_a_ttl_repeats_aggregate_however_late(store: SqliteStore) -> None:
    clock = VirtualClock(start=1_800_000_000.0)
    recorder = EventRecorder(store=store, clock=clock, ttl=0)
    sink = recorder.sink("job-controller")
    sink.normal(_pod(), "Completed", "Job completed")
    clock.advance(clock.time() + 10 * 3600)
    sink.normal(_pod(), "Completed", "Job completed")
    await recorder.stop()
    (ev,) = await items(store, "Event")
    assert ev["count"] == 2


async def test_the_kubelet_records_back_off_while_a_container_crash_loops(
    store: SqliteStore, start: Start
) -> None:
    """kuberuntime's BackOff Warning, by container field path and node. (Pulled, Created
    and Started are not recorded: 45,000 more Events cost W10k 17%, docs/controllers.md.)"""
    await start()
    crashing = {"gitkrm.io/simulate": "crashloop"}
    await store.create(
        deployment("loop", image="busybox:1.36", container="main", template_annotations=crashing)
    )

    async def backoff() -> Any:
        pods = await items(store, "Pod")
        if len(pods) != 1:
            return None
        found = await events_of(store, pods[0], "BackOff")
        return (pods[0], found[0]) if found else None

    pod, event = await wait_until(backoff, what="the BackOff event")
    md = pod["metadata"]
    assert event["type"] == "Warning"
    assert event["message"] == (
        f"Back-off restarting failed container main in pod {md['name']}_default({md['uid']})"
    )
    assert event["involvedObject"]["fieldPath"] == "spec.containers{main}"
    assert event["source"] == {"component": "kubelet", "host": pod["spec"]["nodeName"]}
    assert event["reportingInstance"] == pod["spec"]["nodeName"]
