"""batch: many writes in one transaction, all or nothing, events after commit."""

from __future__ import annotations

import asyncio

import pytest

from gitkrm.errors import AlreadyExists, Invalid, NotFound
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store.protocol import BatchOp, BatchOpKind, Propagation
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import configmap, deployment, namespace

CMS = GVK(group="", version="v1", kind="ConfigMap")


def create(obj: dict[str, object]) -> BatchOp:
    return BatchOp(op=BatchOpKind.CREATE, obj=obj)


async def test_batch_writes_everything_with_own_revisions(store: SqliteStore) -> None:
    start = store.resource_version
    ops = [create(namespace("team")), *(create(configmap(f"c{i}", "team")) for i in range(5))]
    ops.append(
        BatchOp(
            op=BatchOpKind.PATCH,
            ref=ObjectRef(group="", kind="ConfigMap", namespace="team", name="c0"),
            patch={"data": {"p": "1"}},
            patch_type="merge",
        )
    )
    ops.append(
        BatchOp(
            op=BatchOpKind.DELETE,
            ref=ObjectRef(group="", kind="ConfigMap", namespace="team", name="c1"),
            propagation=Propagation.BACKGROUND,
        )
    )
    results = await store.batch(ops)
    rvs = [int(r["metadata"]["resourceVersion"]) for r in results]
    assert rvs == list(range(start + 1, start + 9))
    assert results[6]["data"] == {"p": "1"}
    names = [i["metadata"]["name"] for i in (await store.list(CMS, namespace="team"))["items"]]
    assert names == ["c0", "c2", "c3", "c4"]


async def test_batch_is_all_or_nothing(store: SqliteStore) -> None:
    await store.create(configmap("exists"))
    start = store.resource_version
    it = store.watch(CMS, resource_version=str(start))
    bad = deployment("web")
    bad["spec"]["replicas"] = -1
    ops = [create(configmap("a")), create(configmap("b")), create(deployment("ok")), create(bad)]
    with pytest.raises(Invalid) as err:
        await store.batch(ops)
    assert err.value.message.startswith("op 3 (Deployment default/web): Deployment.apps")
    with pytest.raises(
        AlreadyExists, match=r'^op 1 \(ConfigMap exists\): configmaps "exists" already exists$'
    ):
        await store.batch(
            [
                create(configmap("a")),
                create({**configmap("exists"), "metadata": {"name": "exists"}}),
            ]
        )
    assert store.resource_version == start
    for name in ("a", "b"):
        with pytest.raises(NotFound):
            await store.get(ObjectRef(group="", kind="ConfigMap", namespace="default", name=name))
    # Nothing was published: the next event a watcher sees is the next commit.
    await store.create(configmap("after"))
    ev = await asyncio.wait_for(anext(it), 5)
    assert ev.obj["metadata"]["name"] == "after"
    assert int(ev.obj["metadata"]["resourceVersion"]) == start + 1


async def test_batch_events_published_after_commit_in_order(mem: SqliteStore) -> None:
    it = mem.watch(CMS, resource_version=str(mem.resource_version))
    await mem.batch([create(configmap(f"c{i}")) for i in range(10)])
    events = [await asyncio.wait_for(anext(it), 5) for _ in range(10)]
    assert [e.obj["metadata"]["name"] for e in events] == [f"c{i}" for i in range(10)]


async def test_batch_dry_run(mem: SqliteStore) -> None:
    start = mem.resource_version
    results = await mem.batch(
        [
            create(configmap("a")),
            BatchOp(op=BatchOpKind.UPDATE, obj={**configmap("a"), "data": {"x": "1"}}),
        ],
        dry_run=True,
    )
    assert results[1]["data"] == {"x": "1"}
    assert mem.resource_version == start
    assert (await mem.list(CMS))["items"] == []


async def test_batch_warnings(mem: SqliteStore) -> None:
    obj = configmap("a")
    obj["bogus"] = True
    warnings: list[str] = []
    await mem.batch([create(obj)], field_validation="Warn", warnings=warnings)
    assert warnings == ['unknown field "bogus"']
