"""Reading live objects: one list for many objects of a kind, single gets for a few."""

from __future__ import annotations

import pytest

from gitkrm.krm import GVK, ObjectRef
from gitkrm.store import Store
from gitkrm.sync import live

CM = GVK(group="", version="v1", kind="ConfigMap")


async def seed(store: Store, n: int) -> None:
    await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    for i in range(n):
        await store.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"c{i}", "namespace": "apps"},
            }
        )


@pytest.mark.parametrize("count", [3, live.LIST_ABOVE + 5])
async def test_read_finds_present_and_absent_objects(
    store: Store, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed(store, count)
    monkeypatch.setattr(live, "PAGE", 7)  # several pages
    calls: list[str] = []
    real_list, real_get = store.list, store.get

    async def counting_list(*a: object, **k: object) -> object:
        calls.append("list")
        return await real_list(*a, **k)  # type: ignore[arg-type]

    async def counting_get(*a: object, **k: object) -> object:
        calls.append("get")
        return await real_get(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "list", counting_list)
    monkeypatch.setattr(store, "get", counting_get)
    wanted = {
        ObjectRef(group="", kind="ConfigMap", name=f"c{i}", namespace="apps"): CM
        for i in range(count)
    }
    missing = ObjectRef(group="", kind="ConfigMap", name="nope", namespace="apps")
    wanted[missing] = CM
    got = await live.read(store, wanted)
    assert got[missing] is None
    assert all(got[r] is not None for r in wanted if r != missing)
    if count > live.LIST_ABOVE:
        assert set(calls) == {"list"}
        assert len(calls) == -(-count // 7)  # one list, page by page
    else:
        assert calls == ["get"] * (count + 1)


async def test_a_kind_the_store_does_not_serve_has_no_objects(store: Store) -> None:
    widget = GVK(group="example.com", version="v1", kind="Widget")
    refs = {
        ObjectRef(group="example.com", kind="Widget", name=f"w{i}", namespace="apps"): widget
        for i in range(40)
    }
    refs[ObjectRef(group="example.com", kind="Gadget", name="g", namespace="apps")] = GVK(
        group="example.com", version="v1", kind="Gadget"
    )
    got = await live.read(store, refs)
    assert set(got.values()) == {None}


def test_watches_start_after_our_writes_only_when_nobody_else_wrote() -> None:
    assert live.contiguous("10", "13", {11, 12, 13})
    assert not live.contiguous("10", "13", {11, 13})
    assert live.contiguous("10", "10", set())
    assert not live.contiguous("abc", "13", {11, 12, 13})
