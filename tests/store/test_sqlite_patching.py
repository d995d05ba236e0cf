"""patch: JSON, merge and strategic merge patches through the store."""

from __future__ import annotations

import pytest

from gitkrm.errors import BadRequest, Conflict, Invalid, NotFound, UnsupportedMediaType
from gitkrm.krm import ObjectRef
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import crd, deployment, widget

WEB = ObjectRef(group="apps", kind="Deployment", namespace="default", name="web")


async def test_merge_patch(store: SqliteStore) -> None:
    before = await store.create(deployment("web"))
    out = await store.patch(
        WEB, {"spec": {"replicas": 3}, "metadata": {"labels": {"x": "y"}}}, "merge"
    )
    assert out["spec"]["replicas"] == 3
    assert out["metadata"]["labels"] == {"app": "web", "x": "y"}
    assert out["metadata"]["generation"] == 2
    assert int(out["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    assert await store.get(WEB) == out


async def test_json_patch(mem: SqliteStore) -> None:
    await mem.create(deployment("web"))
    ops = [
        {"op": "replace", "path": "/spec/replicas", "value": 4},
        {"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}},
    ]
    out = await mem.patch(WEB, ops, "json")
    assert out["spec"]["replicas"] == 4
    assert out["metadata"]["annotations"] == {"a": "b"}
    with pytest.raises(BadRequest):
        await mem.patch(WEB, {"op": "replace"}, "json")


async def test_strategic_merge_patch_merges_lists_by_key(mem: SqliteStore) -> None:
    await mem.create(deployment("web"))
    patch = {
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1"}]}}}
    }
    out = await mem.patch(WEB, patch, "strategic")
    names = [c["name"] for c in out["spec"]["template"]["spec"]["containers"]]
    assert names == ["sidecar", "c"] or names == ["c", "sidecar"]
    merge = await mem.patch(WEB, patch, "merge")  # a merge patch replaces the list
    assert [c["name"] for c in merge["spec"]["template"]["spec"]["containers"]] == ["sidecar"]


async def test_patch_errors(mem: SqliteStore) -> None:
    with pytest.raises(NotFound):
        await mem.patch(WEB, {}, "merge")
    d = await mem.create(deployment("web"))
    with pytest.raises(Invalid, match="fieldManager: Required value"):
        await mem.patch(WEB, {}, "apply")  # server-side apply names its manager
    stale = {"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 2}}
    with pytest.raises(Conflict, match="the object has been modified"):
        await mem.patch(WEB, stale, "merge")
    current = {
        "metadata": {"resourceVersion": d["metadata"]["resourceVersion"]},
        "spec": {"replicas": 2},
    }
    assert (await mem.patch(WEB, current, "merge"))["spec"]["replicas"] == 2
    with pytest.raises(Invalid):
        await mem.patch(WEB, {"spec": {"replicas": -1}}, "merge")
    with pytest.raises(BadRequest, match="does not match the name"):
        await mem.patch(WEB, {"metadata": {"name": "other"}}, "merge")
    assert (await mem.get(WEB))["spec"]["replicas"] == 2


async def test_patch_status_and_dry_run(mem: SqliteStore) -> None:
    await mem.create(deployment("web"))
    ignored = await mem.patch(WEB, {"status": {"replicas": 1}}, "merge")
    assert "status" not in ignored
    out = await mem.patch(
        WEB, {"status": {"replicas": 1}, "spec": {"replicas": 9}}, "merge", subresource="status"
    )
    assert out["status"] == {"replicas": 1}
    assert out["spec"]["replicas"] == 1
    dry = await mem.patch(WEB, {"spec": {"replicas": 5}}, "merge", dry_run=True)
    assert dry["spec"]["replicas"] == 5
    assert (await mem.get(WEB))["spec"]["replicas"] == 1


async def test_strategic_patch_on_custom_resources_is_unsupported(mem: SqliteStore) -> None:
    await mem.create(crd())
    await mem.create(widget("w"))
    ref = ObjectRef(group="example.com", kind="Widget", namespace="default", name="w")
    with pytest.raises(UnsupportedMediaType, match="unknown format"):
        await mem.patch(ref, {"spec": {"size": 2}}, "strategic")
    assert (await mem.patch(ref, {"spec": {"size": 2}}, "merge"))["spec"]["size"] == 2
