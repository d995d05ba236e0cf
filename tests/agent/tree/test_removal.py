"""The tree's writes on declaring objects and a removed child's objects, on the real
SQLite store: finalizers put and lifted (a deleted object then goes), and the prune of a
child's inventory that leaves what another source owns or what is kept on purpose."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gitkrm.agent.tree import removal
from gitkrm.errors import NotFound
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store import Store, open_store
from gitkrm.sync import inventory
from gitkrm.sync.objkey import object_key
from tests.support.builders import configmap


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    s = await open_store("sqlite:///:memory:")
    yield s
    await s.close()


def cm(name: str) -> ObjectRef:
    return ObjectRef(group="", kind="ConfigMap", name=name, namespace="default")


async def test_a_finalizer_holds_a_deleted_object_until_lifted(store: Store) -> None:
    await store.create(configmap("decl", a="1"))
    ref = cm("decl")
    writes: list[Obj] = []
    await removal.add_finalizer(store, ref, "gitkrm.io/prune", on_write=writes.append)
    await removal.add_finalizer(store, ref, "gitkrm.io/prune", on_write=writes.append)
    assert len(writes) == 1  # the second finds it there: no write
    await store.delete(ref)
    held = await store.get(ref)
    assert held["metadata"]["deletionTimestamp"]
    # too late to put one on an object being deleted
    assert await removal.add_finalizer(store, ref, "other", on_write=writes.append) == held
    await removal.remove_finalizer(store, ref, "gitkrm.io/prune", on_write=writes.append)
    with pytest.raises(NotFound):
        await store.get(ref)
    await removal.remove_finalizer(store, ref, "gitkrm.io/prune", on_write=writes.append)


async def test_prune_inventory_deletes_only_what_the_child_still_owns(store: Store) -> None:
    def owned(name: str, source: str, **annotations: str) -> Obj:
        return configmap(name, labels={"gitkrm.io/source": source}, annotations=annotations)

    await store.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gitkrm-system"}}
    )
    for obj in (
        owned("mine", "child"),
        owned("kept", "child", **{"gitkrm.io/prune": "disabled"}),
        owned("taken", "other"),
    ):
        await store.create(obj)
    listed = [cm(n) for n in ("mine", "kept", "taken", "gone")]
    await inventory.write(
        store,
        [object_key(r) for r in listed],
        current=inventory.Inventory(),
        source="child",
        inventory_id="agent.child",
    )
    deleted, errors = await removal.prune_inventory(store, source="child", agent_name="agent")
    assert (deleted, errors) == (1, [])
    for name, stays in (("mine", False), ("kept", True), ("taken", True)):
        try:
            await store.get(cm(name))
            assert stays, name
        except NotFound:
            assert not stays, name
    left = await inventory.read(store, source="child", inventory_id="agent.child")
    assert left.entries == frozenset()
