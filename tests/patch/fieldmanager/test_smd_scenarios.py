"""Scenarios ported from sigs.k8s.io/structured-merge-diff (Apache-2.0), merge/*_test.go:
multiple_appliers_test.go, set_test.go, key_test.go, leaf_test.go, nested_test.go —
apply, update by another manager, re-apply without a field, conflicts, force, set and
keyed lists, atomic maps. Objects are shaped as Kubernetes objects around the same
field layouts."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import Conflict
from gitkrm.patch.fieldmanager import SchemaType, apply, managed_fields_for_update

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "properties": {
                "numeric": {"type": "integer"},
                "string": {"type": "string"},
                "bool": {"type": "boolean"},
                "list": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "items": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "value": {"type": "integer"}},
                    },
                },
                "atomicMap": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"},
                },
                "plain": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}
TYP = SchemaType.from_schema(SCHEMA)
AV = "example.com/v1"


def obj(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": AV, "kind": "Thing", "metadata": {"name": "x"}, "spec": spec}


def do_apply(live: dict[str, Any] | None, manager: str, force: bool = False, **spec: Any) -> Any:
    return apply(
        live=live,
        config=obj(**spec),
        manager=manager,
        api_version=AV,
        force=force,
        typ=TYP,
        now="2024-01-01T00:00:00Z",
    )


def do_update(live: dict[str, Any], manager: str, **spec: Any) -> dict[str, Any]:
    new = {**live, "spec": {**live["spec"], **spec}}
    new["metadata"] = dict(live["metadata"])
    mf = managed_fields_for_update(
        old=live,
        new=new,
        manager=manager,
        api_version=AV,
        subresource=None,
        typ=TYP,
        now="2024-01-02T00:00:00Z",
    )
    new["metadata"]["managedFields"] = mf
    return new


def owners(o: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e["fieldsV1"] for e in o["metadata"].get("managedFields", [])}


def test_apply_creates_and_owns_exactly_its_config() -> None:
    o = do_apply(None, "a", numeric=1, string="s")
    assert o["spec"] == {"numeric": 1, "string": "s"}
    assert owners(o) == {"a": {"f:spec": {"f:numeric": {}, "f:string": {}}}}
    assert o["metadata"]["managedFields"][0]["operation"] == "Apply"


def test_shared_ownership_when_two_appliers_agree() -> None:  # multiple_appliers_test
    o = do_apply(None, "a", numeric=1, string="s")
    o = do_apply(o, "b", numeric=1)
    assert owners(o)["b"] == {"f:spec": {"f:numeric": {}}}
    assert owners(o)["a"] == {"f:spec": {"f:numeric": {}, "f:string": {}}}
    # a stops applying numeric: b still owns it, so the value stays
    o = do_apply(o, "a", string="s")
    assert o["spec"]["numeric"] == 1
    # b stops too: nobody owns it, it is removed
    o = do_apply(o, "b", bool=True)
    assert "numeric" not in o["spec"]


def test_reapply_without_a_field_removes_it() -> None:  # leaf_test
    o = do_apply(None, "a", numeric=1, string="s")
    o = do_apply(o, "a", string="s")
    assert o["spec"] == {"string": "s"}


def test_update_takes_ownership_and_apply_then_conflicts() -> None:
    o = do_apply(None, "a", numeric=1, string="s")
    o = do_update(o, "controller", numeric=2)
    assert owners(o)["controller"] == {"f:spec": {"f:numeric": {}}}
    assert owners(o)["a"] == {"f:spec": {"f:string": {}}}
    with pytest.raises(Conflict) as err:
        do_apply(o, "a", numeric=1, string="s")
    assert err.value.message == (
        'Apply failed with 1 conflict: conflict with "controller" using example.com/v1: '
        ".spec.numeric"
    )
    [cause] = err.value.causes
    assert (cause.type, cause.field) == ("FieldManagerConflict", ".spec.numeric")
    # the same value is no conflict: ownership is shared
    o2 = do_apply(o, "a", numeric=2, string="s")
    assert owners(o2)["controller"] == {"f:spec": {"f:numeric": {}}}
    # force takes the field over
    o3 = do_apply(o, "a", force=True, numeric=1, string="s")
    assert o3["spec"]["numeric"] == 1
    assert "controller" not in owners(o3)


def test_conflicts_with_two_managers_are_listed() -> None:
    o = do_apply(None, "a", numeric=1, string="s")
    o = do_apply(o, "b", bool=True)
    with pytest.raises(Conflict) as err:
        do_apply(o, "c", numeric=5, string="t", bool=False)
    assert err.value.message.startswith('Apply failed with 3 conflicts: conflicts with "a":')
    assert len(err.value.causes) == 3


def test_set_lists_merge_by_value() -> None:  # set_test
    o = do_apply(None, "a", list=["a", "b"])
    o = do_apply(o, "b", list=["c"])
    assert o["spec"]["list"] == ["a", "b", "c"]
    assert owners(o)["b"] == {"f:spec": {"f:list": {'v:"c"': {}}}}
    o = do_apply(o, "a", list=["b"])
    assert o["spec"]["list"] == ["b", "c"]


def test_keyed_lists_merge_by_key() -> None:  # key_test / nested_test
    o = do_apply(None, "a", items=[{"name": "x", "value": 1}, {"name": "y", "value": 2}])
    o = do_apply(o, "b", items=[{"name": "z", "value": 3}])
    assert [i["name"] for i in o["spec"]["items"]] == ["x", "y", "z"]
    assert owners(o)["b"] == {
        "f:spec": {"f:items": {'k:{"name":"z"}': {".": {}, "f:name": {}, "f:value": {}}}}
    }
    o = do_apply(o, "a", items=[{"name": "y", "value": 2}])
    assert [i["name"] for i in o["spec"]["items"]] == ["y", "z"]
    with pytest.raises(Conflict) as err:
        do_apply(o, "a", items=[{"name": "z", "value": 4}])
    assert err.value.causes[0].field == '.spec.items[name="z"].value'


def test_atomic_maps_and_lists_are_owned_whole() -> None:
    o = do_apply(None, "a", atomicMap={"k": "v"}, plain=["1", "2"])
    assert owners(o)["a"] == {"f:spec": {"f:atomicMap": {}, "f:plain": {}}}
    with pytest.raises(Conflict):
        do_apply(o, "b", atomicMap={"k": "w"})
    o = do_apply(o, "b", force=True, atomicMap={"other": "v"})
    assert o["spec"]["atomicMap"] == {"other": "v"}


def test_noop_update_keeps_entries_untouched() -> None:
    o = do_apply(None, "a", numeric=1)
    before = o["metadata"]["managedFields"]
    new = {**o, "metadata": {**o["metadata"]}}
    mf = managed_fields_for_update(
        old=o, new=new, manager="b", api_version=AV, subresource=None, typ=TYP, now="later"
    )
    assert mf == before
    assert mf[0] is before[0]


def test_reset_with_an_empty_list() -> None:
    o = do_apply(None, "a", numeric=1)
    new = {**o, "metadata": {**o["metadata"], "managedFields": []}}
    mf = managed_fields_for_update(
        old=o, new=new, manager="b", api_version=AV, subresource=None, typ=TYP, now="later"
    )
    assert mf == []


def test_client_side_apply_migrates_to_server_side() -> None:
    """kubectl's csaupgrade rewrites the kubectl-client-side-apply Update entry as a
    kubectl Apply entry with a PATCH of managedFields; the next apply owns cleanly."""
    live = obj(numeric=1, string="s")
    live["metadata"]["managedFields"] = managed_fields_for_update(
        old=None,
        new=live,
        manager="kubectl-client-side-apply",
        api_version=AV,
        subresource=None,
        typ=TYP,
        now="2024-01-01T00:00:00Z",
    )
    csa = live["metadata"]["managedFields"][0]
    upgraded = {**csa, "manager": "kubectl", "operation": "Apply"}
    new = {**live, "metadata": {**live["metadata"], "managedFields": [upgraded]}}
    mf = managed_fields_for_update(
        old=live,
        new=new,
        manager="kubectl",
        api_version=AV,
        subresource=None,
        typ=TYP,
        now="2024-01-01T00:00:01Z",
    )
    assert [(e["manager"], e["operation"]) for e in mf] == [("kubectl", "Apply")]
    new["metadata"]["managedFields"] = mf
    out = do_apply(new, "kubectl", string="s")
    assert out["spec"] == {"string": "s"}
    assert owners(out) == {"kubectl": {"f:spec": {"f:string": {}}}}
