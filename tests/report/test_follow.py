from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from gitkrm.health import Health, HealthResult, health_of
from gitkrm.krm import ObjectRef
from gitkrm.report import HealthFollower, Reporter
from gitkrm.store import Store, open_store
from tests.report.report_fixtures import ReporterMaker, SourceMaker, reporting
from tests.report.report_helpers import objects_of, read_note, result
from tests.source.source_gitrepo import RemoteRepo

WEB = ObjectRef(group="apps", kind="Deployment", name="web", namespace="default")
GHOST = ObjectRef(group="", kind="ConfigMap", name="ghost", namespace="default")
WIDGET = ObjectRef(group="example.com", kind="Widget", name="w", namespace="default")


def _deployment() -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        # The source's label, as the agent writes it: the follower reads the source's scope.
        "metadata": {
            "name": "web",
            "namespace": "default",
            "labels": {"gitkrm.io/source": "default"},
        },
        "spec": {
            "replicas": 1,
            "progressDeadlineSeconds": 60,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx:broken"}]},
            },
        },
    }


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    s = await open_store("sqlite:///:memory:")
    yield s
    await s.close()


class Heard:
    """Wraps a reporter's record_health to wait for the verdicts it is told."""

    def __init__(self, rep: Reporter) -> None:
        self.verdicts: dict[ObjectRef, HealthResult] = {}
        self.changed = asyncio.Event()
        original = rep.record_health

        async def record_health(**kw: Any) -> None:
            await original(**kw)
            health: Mapping[ObjectRef, HealthResult] = kw["health"]
            self.verdicts.update(health)
            self.changed.set()

        rep.record_health = record_health  # type: ignore[method-assign]

    async def until(self, ref: ObjectRef, status: Health) -> None:
        async with asyncio.timeout(10):
            while self.verdicts.get(ref, HealthResult(Health.UNKNOWN, "")).status is not status:
                self.changed.clear()
                await self.changed.wait()


async def test_health_is_followed_into_the_note(
    store: Store, make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo
) -> None:
    src, rep = await reporting(make_source, make_reporter, remote)
    heard = Heard(rep)
    live = await store.create(_deployment())
    head = remote.head()
    refs = [WEB, GHOST, WIDGET]
    await rep.record_sync(
        source_name="default", result=result(head, refs), health={WEB: health_of(live)}
    )
    follower = HealthFollower(store, rep)
    try:
        follower.follow("default", head, refs)
        await heard.until(GHOST, Health.NOT_FOUND)
        await heard.until(WIDGET, Health.NOT_FOUND)  # its kind is not even served
        assert heard.verdicts[WEB].reason == "LessReplicas"
        # The controller gives up on the rollout: the deadline passed.
        failing = copy.deepcopy(live)
        failing["status"] = {
            "observedGeneration": live["metadata"]["generation"],
            "replicas": 1,
            "unavailableReplicas": 1,
            "conditions": [
                {
                    "type": "Progressing",
                    "status": "False",
                    "reason": "ProgressDeadlineExceeded",
                    "message": 'ReplicaSet "web-1" has timed out progressing.',
                }
            ],
        }
        await store.update_status(failing)
        await heard.until(WEB, Health.FAILED)
        await rep.settled()
        note = read_note(src.cache_dir, "edge-1", head)
        assert note is not None
        assert note["sources"]["default"]["health"] == "Failed"
        assert objects_of(note["sources"]["default"]) == {
            "Deployment default/web": "Failed",
            "ConfigMap default/ghost": "NotFound",
            "Widget default/w": "NotFound",
        }
        # Following another revision stops the old one.
        old = follower._tasks["default"]
        follower.follow("default", "f" * 40, [GHOST])
        assert follower._tasks["default"] is not old
        await asyncio.wait({old}, timeout=10)
        assert old.cancelled()
        follower.stop("default")
        assert "default" not in follower._tasks
    finally:
        await follower.close()


async def test_a_job_deleted_by_its_ttl_is_reported_current(
    store: Store, make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo
) -> None:
    job_ref = ObjectRef(group="batch", kind="Job", name="migrate", namespace="default")
    _src, rep = await reporting(make_source, make_reporter, remote)
    heard = Heard(rep)
    await store.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "migrate",
                "namespace": "default",
                "labels": {"gitkrm.io/source": "default"},
            },
            "spec": {
                "ttlSecondsAfterFinished": 0,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "m", "image": "busybox"}],
                    }
                },
            },
        }
    )
    head = remote.head()
    await rep.record_sync(source_name="default", result=result(head, [job_ref]), health={})
    follower = HealthFollower(store, rep)
    try:
        follower.follow("default", head, [job_ref], ttl_jobs=frozenset({job_ref.key}))
        await heard.until(job_ref, Health.IN_PROGRESS)  # not started yet
        await store.delete(job_ref)  # the TTL controller, once it finished
        await heard.until(job_ref, Health.CURRENT)
        assert heard.verdicts[job_ref].reason == "DeletedAfterFinished"
    finally:
        await follower.close()
