"""The inventory: cli-utils keys, shards under the size limit, and store round trips."""

from __future__ import annotations

import pytest

from gitkrm.errors import BadRequest, Conflict
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store import Store
from gitkrm.sync import inventory
from gitkrm.sync.objkey import object_key, parse_key

CM = GVK(group="", version="v1", kind="ConfigMap")


@pytest.mark.parametrize(
    ("ref", "key"),
    [
        (
            ObjectRef(group="apps", kind="Deployment", name="web", namespace="prod"),
            "prod_web_apps_Deployment",
        ),
        (ObjectRef(group="", kind="Namespace", name="prod"), "_prod__Namespace"),
        (ObjectRef(group="", kind="ConfigMap", name="a.b", namespace="n"), "n_a.b__ConfigMap"),
        (
            ObjectRef(group="rbac.authorization.k8s.io", kind="ClusterRole", name="system:viewer"),
            "_system__viewer_rbac.authorization.k8s.io_ClusterRole",
        ),
    ],
)
def test_keys_are_cli_utils_objmetadata_strings(ref: ObjectRef, key: str) -> None:
    assert object_key(ref) == key
    assert parse_key(key) == ref


@pytest.mark.parametrize("bad", ["nounderscore", "ns_name_Kind", "_a_b_c_d_Kind", "n__g_K"])
def test_malformed_keys_are_refused(bad: str) -> None:
    with pytest.raises(BadRequest):
        parse_key(bad)


def test_shards_stay_under_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inventory, "SHARD_BYTES", 200)
    keys = [f"ns_obj-{i:03d}__ConfigMap" for i in range(30)]
    made = inventory.shards(keys, source="s", inventory_id="a.s")
    assert [m["metadata"]["name"] for m in made][:3] == [
        "gitkrm-inventory-s",
        "gitkrm-inventory-s-1",
        "gitkrm-inventory-s-2",
    ]
    assert sorted(k for m in made for k in m["data"]) == sorted(keys)
    for m in made:
        assert sum(len(k) + 8 for k in m["data"]) <= 200
        assert m["metadata"]["namespace"] == "gitkrm-system"
        assert m["metadata"]["labels"]["cli-utils.sigs.k8s.io/inventory-id"] == "a.s"
        assert set(m["data"].values()) == {""}
    assert inventory.shards([], source="s", inventory_id="a.s")[0]["data"] == {}


async def test_write_read_grow_and_shrink(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inventory, "SHARD_BYTES", 200)
    empty = await inventory.read(store, source="s", inventory_id="a.s")
    assert empty.entries == frozenset()
    assert await inventory.ensure_namespace(store) is not None
    assert await inventory.ensure_namespace(store) is None
    many = frozenset(f"ns_obj-{i:03d}__ConfigMap" for i in range(30))
    written = await inventory.write(store, many, current=empty, source="s", inventory_id="a.s")
    assert len(written.versions) > 2
    back = await inventory.read(store, source="s", inventory_id="a.s")
    assert back.entries == many
    assert back.versions == written.versions
    assert await inventory.read(store, source="s", inventory_id="a.s", cache=back) is back
    few = frozenset(list(many)[:2])
    shrunk = await inventory.write(store, few, current=back, source="s", inventory_id="a.s")
    assert list(shrunk.versions) == ["gitkrm-inventory-s"]
    listed = await store.list(CM, namespace="gitkrm-system")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["gitkrm-inventory-s"]
    assert (await inventory.read(store, source="s", inventory_id="a.s")).entries == few
    assert [r.name for r in shrunk.refs()] == sorted(r.name for r in map(parse_key, few))


async def test_a_stale_write_reads_again_and_wins(store: Store) -> None:
    await inventory.ensure_namespace(store)
    first = await inventory.write(
        store, {"n_a__ConfigMap"}, current=inventory.Inventory(), source="s", inventory_id="a.s"
    )
    await inventory.write(store, {"n_b__ConfigMap"}, current=first, source="s", inventory_id="a.s")
    # `first` is stale now: the write is retried against what is stored.
    done = await inventory.write(
        store, {"n_c__ConfigMap"}, current=first, source="s", inventory_id="a.s"
    )
    assert (await inventory.read(store, source="s", inventory_id="a.s")).entries == {
        "n_c__ConfigMap"
    }
    assert done.entries == {"n_c__ConfigMap"}


async def test_other_sources_and_agents_have_their_own_inventory(store: Store) -> None:
    await inventory.ensure_namespace(store)
    for source, agent in (("s", "a"), ("s2", "a")):
        await inventory.write(
            store,
            {f"n_{source}__ConfigMap"},
            current=inventory.Inventory(),
            source=source,
            inventory_id=f"{agent}.{source}",
        )
    assert (await inventory.read(store, source="s", inventory_id="a.s")).entries == {
        "n_s__ConfigMap"
    }
    assert (await inventory.read(store, source="s2", inventory_id="a.s2")).entries == {
        "n_s2__ConfigMap"
    }
    # Agent b's source "s" would use the same ConfigMap name: its write is refused.
    with pytest.raises(Conflict, match="belongs to another agent"):
        await inventory.write(
            store, {"n_x__ConfigMap"}, current=inventory.Inventory(), source="s", inventory_id="b.s"
        )
