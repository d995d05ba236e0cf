"""Deletion: finalizers, preconditions, propagation, namespaces and CRDs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.errors import BadRequest, Conflict, Invalid, NotFound
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store.protocol import Preconditions, Propagation
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import configmap, crd, deployment, namespace, widget

CM = ObjectRef(group="", kind="ConfigMap", namespace="default", name="cfg")
WEB = ObjectRef(group="apps", kind="Deployment", namespace="default", name="web")
WIDGETS = GVK(group="example.com", version="v1", kind="Widget")


async def test_delete_without_finalizers(store: SqliteStore) -> None:
    created = await store.create(configmap("cfg"))
    gone = await store.delete(CM)
    assert gone["metadata"]["uid"] == created["metadata"]["uid"]
    assert int(gone["metadata"]["resourceVersion"]) == store.resource_version
    with pytest.raises(NotFound):
        await store.get(CM)
    with pytest.raises(NotFound, match=r'^configmaps "cfg" not found$'):
        await store.delete(CM)


async def test_finalizers_hold_the_object_until_removed(store: SqliteStore) -> None:
    obj = deployment("web")
    obj["metadata"]["finalizers"] = ["example.com/hold"]
    await store.create(obj)
    marked = await store.delete(WEB)
    md = marked["metadata"]
    assert md["deletionTimestamp"]
    assert md["deletionGracePeriodSeconds"] == 0
    assert md["generation"] == 2
    assert await store.get(WEB) == marked
    again = await store.delete(WEB)  # deleting again changes nothing
    assert again["metadata"]["resourceVersion"] == md["resourceVersion"]
    marked["metadata"]["finalizers"] = ["example.com/hold", "example.com/new"]
    with pytest.raises(Invalid, match="no new finalizers can be added"):
        await store.update(marked)
    marked["metadata"]["finalizers"] = []
    final = await store.update(marked)
    assert final["metadata"]["deletionTimestamp"] == md["deletionTimestamp"]
    with pytest.raises(NotFound):
        await store.get(WEB)


async def test_delete_preconditions(mem: SqliteStore) -> None:
    cm = await mem.create(configmap("cfg"))
    with pytest.raises(Conflict, match="Precondition failed: UID in precondition: x, UID in"):
        await mem.delete(CM, preconditions=Preconditions(uid="x"))
    with pytest.raises(Conflict, match="ResourceVersion in precondition: 1, ResourceVersion"):
        await mem.delete(CM, preconditions=Preconditions(resource_version="1"))
    await mem.get(CM)
    md = cm["metadata"]
    pre = Preconditions(uid=md["uid"], resource_version=md["resourceVersion"])
    await mem.delete(CM, preconditions=pre)
    with pytest.raises(NotFound):
        await mem.get(CM)


@pytest.mark.parametrize(
    ("policy", "finalizer"),
    [(Propagation.FOREGROUND, "foregroundDeletion"), ("Orphan", "orphan")],
)
async def test_propagation_recorded_as_finalizer(
    mem: SqliteStore, policy: Propagation | str, finalizer: str
) -> None:
    await mem.create(deployment("web"))
    marked = await mem.delete(WEB, propagation=policy)
    assert marked["metadata"]["finalizers"] == [finalizer]
    assert marked["metadata"]["deletionTimestamp"]
    # Background drops the garbage collector's finalizers again: the object goes.
    await mem.delete(WEB, propagation=Propagation.BACKGROUND)
    with pytest.raises(NotFound):
        await mem.get(WEB)
    with pytest.raises(BadRequest, match="invalid propagationPolicy"):
        await mem.delete(WEB, propagation="Sideways")


async def test_namespace_lifecycle(store: SqliteStore) -> None:
    await store.create(namespace("team"))
    ref = ObjectRef(group="", kind="Namespace", name="team")
    term = await store.delete(ref)
    assert term["status"]["phase"] == "Terminating"
    assert term["metadata"]["deletionTimestamp"]
    assert term["spec"]["finalizers"] == ["kubernetes"]
    term["spec"]["finalizers"] = []  # a plain update cannot change spec.finalizers
    kept = await store.update(term)
    assert kept["spec"]["finalizers"] == ["kubernetes"]
    assert kept["metadata"]["resourceVersion"] == term["metadata"]["resourceVersion"]  # no-op
    stale = {**kept, "metadata": {**kept["metadata"], "resourceVersion": "1"}}
    with pytest.raises(Conflict):
        await store.finalize_namespace(stale)
    kept["spec"]["finalizers"] = []
    await store.finalize_namespace(kept)
    with pytest.raises(NotFound, match='namespaces "team" not found'):
        await store.get(ref)


async def test_crd_registers_kinds_and_deletes_custom_resources(store: SqliteStore) -> None:
    created = await store.create(crd())
    conds = {c["type"]: c["status"] for c in created["status"]["conditions"]}
    assert conds["Established"] == "True"
    w = await store.create(widget("a"))
    assert w["metadata"]["generation"] == 1
    assert "status" not in w
    w["extra"] = "x"  # custom resources: any change outside metadata/status bumps generation
    w2 = await store.update(w)
    assert w2["metadata"]["generation"] == 2
    w2["status"] = {"ready": True}
    w3 = await store.update_status(w2)
    assert w3["status"] == {"ready": True}
    assert w3["metadata"]["generation"] == 2
    await store.delete(
        ObjectRef(
            group="apiextensions.k8s.io",
            kind="CustomResourceDefinition",
            name="widgets.example.com",
        )
    )
    with pytest.raises(NotFound):
        await store.list(WIDGETS)
    await store.create(crd())
    assert (await store.list(WIDGETS))["items"] == []  # its custom resources went with it


async def test_crds_reregistered_on_open(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    s = SqliteStore.open(path)
    await s.create(crd())
    await s.create(widget("a"))
    await s.close()
    s = SqliteStore.open(path)
    try:
        items = (await s.list(WIDGETS))["items"]
        assert [i["metadata"]["name"] for i in items] == ["a"]
    finally:
        await s.close()


async def test_failed_write_unregisters_crd(mem: SqliteStore) -> None:
    from gitkrm.store.protocol import BatchOp, BatchOpKind

    bad = configmap("cfg")
    bad["data"] = {"k": 1}
    with pytest.raises(Invalid):
        await mem.batch(
            [BatchOp(op=BatchOpKind.CREATE, obj=crd()), BatchOp(op=BatchOpKind.CREATE, obj=bad)]
        )
    with pytest.raises(NotFound):
        await mem.create(widget("a"))
    await mem.create(crd(), dry_run=True)
    with pytest.raises(NotFound):
        await mem.create(widget("a"))
