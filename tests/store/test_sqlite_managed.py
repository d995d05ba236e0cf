"""managedFields on every write of the SQLite store (operation Update), as the API server
records them: manager, apiVersion served, time, FieldsV1, subresource."""

from __future__ import annotations

import re
from typing import Any

from gitkrm.krm import ObjectRef
from gitkrm.store import BatchOp, BatchOpKind
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import configmap, crd, deployment, widget

WEB = ObjectRef(group="apps", kind="Deployment", namespace="default", name="web")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = obj["metadata"]["managedFields"]
    return out


def fields(e: dict[str, Any]) -> dict[str, Any]:
    """An entry's fieldsV1 without the "." members of structs (whether a struct that was
    already there counts as set is the field manager's business, tested with it)."""

    def strip(node: dict[str, Any]) -> dict[str, Any]:
        return {k: strip(v) for k, v in node.items() if k != "."}

    return strip(e["fieldsV1"])


def entry(obj: dict[str, Any], manager: str, subresource: str | None = None) -> dict[str, Any]:
    found = [
        e for e in entries(obj) if e["manager"] == manager and e.get("subresource") == subresource
    ]
    assert len(found) == 1, entries(obj)
    return found[0]


async def test_create_records_an_update_entry(store: SqliteStore) -> None:
    out = await store.create(deployment("web"), field_manager="tester")
    [e] = entries(out)
    assert e["manager"] == "tester"
    assert e["operation"] == "Update"
    assert e["apiVersion"] == "apps/v1"
    assert e["fieldsType"] == "FieldsV1"
    assert RFC3339.match(e["time"])
    assert "subresource" not in e
    f = e["fieldsV1"]
    assert f["f:spec"]["f:replicas"] == {}
    assert f["f:metadata"]["f:labels"]["f:app"] == {}
    assert 'k:{"name":"c"}' in f["f:spec"]["f:template"]["f:spec"]["f:containers"]
    # Server-managed metadata is nobody's field.
    assert "f:uid" not in f["f:metadata"]
    assert "f:resourceVersion" not in f["f:metadata"]
    assert await store.get(WEB) == out


async def test_create_without_a_manager_names_a_default(mem: SqliteStore) -> None:
    out = await mem.create(configmap("c", a="b"))
    assert [e["manager"] for e in entries(out)] == ["unknown"]


async def test_update_by_another_manager_takes_the_changed_field(mem: SqliteStore) -> None:
    made = await mem.create(deployment("web"), field_manager="first")
    body = await mem.get(WEB)
    body["spec"]["replicas"] = 5
    out = await mem.update(body, field_manager="second")
    assert out["spec"]["replicas"] == 5
    assert entry(out, "second")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in entry(out, "first")["fieldsV1"]["f:spec"]
    assert entry(out, "first") == entry(made, "first") | {
        "fieldsV1": entry(out, "first")["fieldsV1"]
    }


async def test_a_no_op_update_keeps_the_revision_and_the_entries(store: SqliteStore) -> None:
    made = await store.create(deployment("web"), field_manager="first")
    body = await store.get(WEB)
    out = await store.update(body, field_manager="second")
    assert out["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    assert entries(out) == entries(made)
    # A body without managedFields (a client that dropped them) keeps them too.
    del body["metadata"]["managedFields"]
    again = await store.update(body, field_manager="second")
    assert again["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    assert entries(again) == entries(made)


async def test_update_status_records_a_status_entry(mem: SqliteStore) -> None:
    await mem.create(deployment("web"), field_manager="kubectl-create")
    body = await mem.get(WEB)
    body["status"] = {"replicas": 1, "observedGeneration": 1}
    out = await mem.update_status(body, field_manager="controller")
    e = entry(out, "controller", "status")
    assert e["operation"] == "Update"
    assert fields(e) == {"f:status": {"f:observedGeneration": {}, "f:replicas": {}}}
    assert entry(out, "kubectl-create")["fieldsV1"]["f:spec"]


async def test_patches_record_their_manager(mem: SqliteStore) -> None:
    await mem.create(deployment("web"), field_manager="creator")
    merged = await mem.patch(WEB, {"spec": {"replicas": 2}}, "merge", field_manager="merger")
    assert entry(merged, "merger")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]
    jsoned = await mem.patch(WEB, ops, "json", field_manager="jsoner")
    assert entry(jsoned, "jsoner")["fieldsV1"] == {
        "f:metadata": {"f:annotations": {".": {}, "f:a": {}}}
    }
    smp = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}
    stra = await mem.patch(WEB, smp, "strategic", field_manager="strategist")
    containers = entry(stra, "strategist")["fieldsV1"]["f:spec"]["f:template"]["f:spec"][
        "f:containers"
    ]
    assert containers == {'k:{"name":"c"}': {"f:image": {}}}


async def test_a_request_that_sets_managed_fields_is_honoured(mem: SqliteStore) -> None:
    """kubectl's client-side to server-side migration (csaupgrade) writes managedFields
    with a JSON patch: the entries it sends are stored as sent."""
    made = await mem.create(deployment("web"), field_manager="kubectl-client-side-apply")
    old = entry(made, "kubectl-client-side-apply")
    upgraded = [{**old, "manager": "kubectl", "operation": "Apply"}]
    ops = [
        {"op": "replace", "path": "/metadata/managedFields", "value": upgraded},
        {
            "op": "replace",
            "path": "/metadata/resourceVersion",
            "value": made["metadata"]["resourceVersion"],
        },
    ]
    out = await mem.patch(WEB, ops, "json", field_manager="kubectl")
    assert entries(out) == upgraded
    assert int(out["metadata"]["resourceVersion"]) > int(made["metadata"]["resourceVersion"])


async def test_batch_writes_record_entries(mem: SqliteStore) -> None:
    ops = [BatchOp(op=BatchOpKind.CREATE, obj=configmap(f"c{i}", a=str(i))) for i in range(3)]
    out = await mem.batch(ops, field_manager="gitkrm")
    for obj in out:
        assert entry(obj, "gitkrm")["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}


async def test_finalize_records_a_finalize_entry(mem: SqliteStore) -> None:
    ns = await mem.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}},
        field_manager="creator",
    )
    ns["spec"] = {"finalizers": []}
    out = await mem.finalize_namespace(ns, field_manager="finalizer")
    e = entry(out, "finalizer", "finalize")
    assert e["operation"] == "Update"


async def test_custom_resources_use_their_schema(mem: SqliteStore) -> None:
    await mem.create(crd())
    out = await mem.create(widget("w", size=3), field_manager="me")
    assert entry(out, "me")["apiVersion"] == "example.com/v1"
    assert entry(out, "me")["fieldsV1"]["f:spec"] == {".": {}, "f:size": {}}


async def test_the_initial_namespaces_are_the_api_servers(mem: SqliteStore) -> None:
    ns = await mem.get(ObjectRef(group="", kind="Namespace", name="default"))
    assert [e["manager"] for e in entries(ns)] == ["kube-apiserver"]


async def test_a_scale_write_is_recorded_with_subresource_scale(store: SqliteStore) -> None:
    made = await store.create(deployment("web", replicas=1), field_manager="creator")
    out = await store.patch(
        WEB, {"spec": {"replicas": 4}}, "merge", field_manager="hpa", subresource="scale"
    )
    assert out["spec"]["replicas"] == 4
    assert out["metadata"]["generation"] == made["metadata"]["generation"] + 1
    e = entry(out, "hpa", "scale")
    assert (e["operation"], e["apiVersion"]) == ("Update", "apps/v1")
    assert fields(e) == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in fields(entry(out, "creator"))["f:spec"]  # taken over


async def test_creates_of_one_shape_store_their_entries_as_returned(store: SqliteStore) -> None:
    """Creates of a recurring shape share one field set and splice its stored bytes."""
    ops = [BatchOp(op=BatchOpKind.CREATE, obj=deployment(f"d{i}", replicas=i)) for i in range(6)]
    made = await store.batch(ops, field_manager="sync")
    assert (
        made[4]["metadata"]["managedFields"][0]["fieldsV1"]
        is (made[5]["metadata"]["managedFields"][0]["fieldsV1"])
    )
    for obj in made:
        ref = ObjectRef(
            group="apps", kind="Deployment", namespace="default", name=obj["metadata"]["name"]
        )
        assert await store.get(ref) == obj
        assert entry(obj, "sync")["fieldsV1"]["f:spec"]["f:replicas"] == {}
