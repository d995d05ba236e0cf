"""wait_for against a real store (no controllers: the test writes the status)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from gitkrm.health import Health, HealthResult, wait_for
from gitkrm.krm import ObjectRef
from gitkrm.store.sqlite import SqliteStore

CLAIM = ObjectRef(group="", kind="PersistentVolumeClaim", name="c", namespace="default")
CM = ObjectRef(group="", kind="ConfigMap", name="cm", namespace="default")


@pytest.fixture
async def store() -> AsyncIterator[SqliteStore]:
    s = SqliteStore.open(":memory:")
    await s.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "default"},
        }
    )
    await s.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    )
    yield s
    await s.close()


async def test_waits_until_current(store: SqliteStore) -> None:
    heard: list[tuple[ObjectRef, HealthResult]] = []

    async def bind_later() -> None:
        await asyncio.sleep(0.05)
        claim = await store.get(CLAIM)
        await store.update_status({**claim, "status": {"phase": "Bound"}})

    task = asyncio.create_task(bind_later())
    result = await wait_for(
        store, [CM, CLAIM], timeout=5, on_progress=lambda r, h: heard.append((r, h))
    )
    await task
    assert result.ok
    assert not result.timed_out
    assert result.results[CLAIM].status is Health.CURRENT
    assert (CLAIM, result.results[CLAIM]) in heard


async def test_times_out_naming_what_it_waits_for(store: SqliteStore) -> None:
    missing = ObjectRef(group="apps", kind="Deployment", name="d", namespace="default")
    result = await wait_for(store, [CM, CLAIM, missing], timeout=0.2)
    assert not result.ok
    assert result.timed_out
    lines = result.describe()
    assert any("PersistentVolumeClaim" in line and "NotBound" not in line for line in lines)
    assert any("Deployment.apps default/d: NotFound" in line for line in lines)
    assert len(lines) == 2


async def test_failed_ends_the_wait(store: SqliteStore) -> None:
    claim = await store.get(CLAIM)
    await store.update_status({**claim, "status": {"phase": "Lost"}})
    result = await wait_for(store, [CLAIM], timeout=5)
    assert not result.ok
    assert not result.timed_out
    assert result.failed[0][0] == CLAIM


async def test_absent_refs_wait_for_deletion(store: SqliteStore) -> None:
    async def delete_later() -> None:
        await asyncio.sleep(0.05)
        await store.delete(CM)

    task = asyncio.create_task(delete_later())
    result = await wait_for(store, [], absent=[CM], timeout=5)
    await task
    assert result.ok


JOB = ObjectRef(group="batch", kind="Job", name="migrate", namespace="default", version="v1")


def _job(ttl: int | None) -> dict[str, object]:
    spec: dict[str, object] = {
        "template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "busybox"}]}
        }
    }
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "default"},
        "spec": spec,
    }


async def test_a_ttl_job_deleted_after_finishing_is_done(store: SqliteStore) -> None:
    """ingress-nginx's admission Jobs: finished, then deleted by their own TTL while the
    wait runs. Gone counts as done for a Job whose manifest sets the TTL (as Flux's wait)."""
    await store.create(_job(ttl=0))

    async def finish_then_delete() -> None:
        await asyncio.sleep(0.05)
        await store.delete(JOB)

    task = asyncio.create_task(finish_then_delete())
    heard: list[HealthResult] = []
    result = await wait_for(
        store,
        [JOB],
        timeout=5,
        ttl_jobs=[JOB.key],
        on_progress=lambda r, h: heard.append(h),
    )
    await task
    assert result.ok, result.describe()
    assert result.results[JOB].status is Health.CURRENT
    assert result.results[JOB].reason == "DeletedAfterFinished"
    assert heard[-1].reason == "DeletedAfterFinished"


async def test_a_ttl_job_gone_before_the_wait_is_done(store: SqliteStore) -> None:
    result = await wait_for(store, [JOB], timeout=5, ttl_jobs=[JOB.key])
    assert result.ok, result.describe()


async def test_a_job_without_ttl_that_vanishes_is_not_found(store: SqliteStore) -> None:
    result = await wait_for(store, [JOB], timeout=0.2, ttl_jobs=[])
    assert not result.ok
    assert result.timed_out
    assert result.describe() == ["Job.batch default/migrate: NotFound (Resource not found)"]
