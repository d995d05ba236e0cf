"""Server-side apply through Store.patch(..., "apply"): create when missing, field owners,
conflicts and force, removal of fields an applier stops applying, the API server's option
checks, dry-run, the status subresource and batches."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import BadRequest, Conflict, Invalid, NotFound
from gitkrm.krm import ObjectRef
from gitkrm.store import BatchOp, BatchOpKind
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import configmap, crd, deployment, widget

WEB = ObjectRef(group="apps", kind="Deployment", namespace="default", name="web")
CM = ObjectRef(group="", kind="ConfigMap", namespace="default", name="c")
GADGET = ObjectRef(group="example.com", kind="Widget", namespace="default", name="w")


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


async def test_apply_creates_a_missing_object(store: SqliteStore) -> None:
    out = await store.patch(WEB, deployment("web", replicas=2), "apply", field_manager="me")
    assert out["spec"]["replicas"] == 2
    assert out["metadata"]["uid"]
    [e] = out["metadata"]["managedFields"]
    assert (e["manager"], e["operation"], e["apiVersion"]) == ("me", "Apply", "apps/v1")
    assert e["fieldsV1"]["f:spec"]["f:replicas"] == {}
    # Defaults the server fills in belong to nobody.
    assert out["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert "f:restartPolicy" not in e["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
    assert await store.get(WEB) == out


async def test_reapplying_the_same_configuration_changes_nothing(store: SqliteStore) -> None:
    first = await store.patch(WEB, deployment("web"), "apply", field_manager="me")
    again = await store.patch(WEB, deployment("web"), "apply", field_manager="me")
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert again == first


async def test_a_field_no_longer_applied_is_removed(mem: SqliteStore) -> None:
    await mem.patch(CM, configmap("c", a="1", b="2"), "apply", field_manager="me")
    out = await mem.patch(CM, configmap("c", a="1"), "apply", field_manager="me")
    assert out["data"] == {"a": "1"}
    assert managers(out)[("me", "Apply")]["f:data"] == {"f:a": {}}


async def test_a_field_another_manager_also_applies_stays(mem: SqliteStore) -> None:
    await mem.patch(CM, configmap("c", a="1", b="2"), "apply", field_manager="one")
    await mem.patch(CM, configmap("c", b="2"), "apply", field_manager="two")  # shared: no conflict
    out = await mem.patch(CM, configmap("c", a="1"), "apply", field_manager="one")
    assert out["data"] == {"a": "1", "b": "2"}
    assert managers(out)[("two", "Apply")]["f:data"] == {"f:b": {}}


async def test_a_different_value_is_a_conflict_naming_the_owner(mem: SqliteStore) -> None:
    await mem.patch(WEB, deployment("web", replicas=2), "apply", field_manager="one")
    with pytest.raises(Conflict) as caught:
        await mem.patch(WEB, deployment("web", replicas=3), "apply", field_manager="two")
    e = caught.value
    assert e.code == 409
    assert e.message == 'Apply failed with 1 conflict: conflict with "one": .spec.replicas'
    [cause] = e.causes
    assert (cause.type, cause.field) == ("FieldManagerConflict", ".spec.replicas")
    assert cause.message == 'conflict with "one"'
    assert (await mem.get(WEB))["spec"]["replicas"] == 2


async def test_force_takes_the_field_over(mem: SqliteStore) -> None:
    await mem.patch(WEB, deployment("web", replicas=2), "apply", field_manager="one")
    out = await mem.patch(
        WEB, deployment("web", replicas=3), "apply", field_manager="two", force=True
    )
    assert out["spec"]["replicas"] == 3
    owned = managers(out)
    assert "f:replicas" in owned[("two", "Apply")]["f:spec"]
    assert "f:replicas" not in owned[("one", "Apply")]["f:spec"]


async def test_an_update_takes_ownership_then_apply_conflicts(mem: SqliteStore) -> None:
    await mem.patch(WEB, deployment("web", replicas=2), "apply", field_manager="one")
    await mem.patch(WEB, {"spec": {"replicas": 5}}, "merge", field_manager="scaler")
    with pytest.raises(Conflict, match='conflict with "scaler"'):
        await mem.patch(WEB, deployment("web", replicas=2), "apply", field_manager="one")


async def test_the_options_are_checked_as_the_api_server_does(mem: SqliteStore) -> None:
    with pytest.raises(Invalid) as missing:
        await mem.patch(WEB, deployment("web"), "apply")
    assert missing.value.code == 422
    assert missing.value.message == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )
    await mem.create(deployment("web"))
    with pytest.raises(Invalid) as forced:
        await mem.patch(WEB, {"spec": {"replicas": 2}}, "merge", field_manager="x", force=True)
    assert forced.value.message == (
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for '
        "non-apply patch"
    )


async def test_the_configuration_must_match_the_request(mem: SqliteStore) -> None:
    wrong_version = {**deployment("web"), "apiVersion": "apps/v1beta1"}
    with pytest.raises(BadRequest, match="Incorrect version specified in apply patch"):
        await mem.patch(WEB, wrong_version, "apply", field_manager="me")
    with pytest.raises(BadRequest, match="kind"):
        await mem.patch(
            WEB, {**deployment("web"), "kind": "StatefulSet"}, "apply", field_manager="me"
        )
    with pytest.raises(BadRequest, match=r"the name of the object \(other\)"):
        await mem.patch(WEB, deployment("other"), "apply", field_manager="me")
    body = deployment("web")
    body["metadata"]["managedFields"] = []
    with pytest.raises(BadRequest, match=r"metadata\.managedFields must be nil"):
        await mem.patch(WEB, body, "apply", field_manager="me")


async def test_apply_into_a_missing_namespace_is_not_found(mem: SqliteStore) -> None:
    ref = ObjectRef(group="", kind="ConfigMap", namespace="nowhere", name="c")
    with pytest.raises(NotFound, match='namespaces "nowhere" not found'):
        await mem.patch(ref, configmap("c", "nowhere"), "apply", field_manager="me")


async def test_dry_run_stores_nothing(mem: SqliteStore) -> None:
    out = await mem.patch(CM, configmap("c", a="1"), "apply", field_manager="me", dry_run=True)
    assert out["data"] == {"a": "1"}
    with pytest.raises(NotFound):
        await mem.get(CM)


async def test_a_stale_resource_version_is_a_conflict(mem: SqliteStore) -> None:
    made = await mem.patch(CM, configmap("c", a="1"), "apply", field_manager="me")
    await mem.patch(CM, configmap("c", a="2"), "apply", field_manager="me")
    stale = configmap("c", a="3")
    stale["metadata"]["resourceVersion"] = made["metadata"]["resourceVersion"]
    with pytest.raises(Conflict, match="the object has been modified"):
        await mem.patch(CM, stale, "apply", field_manager="me")


async def test_status_apply_owns_only_status(mem: SqliteStore) -> None:
    await mem.create(crd())
    await mem.patch(GADGET, widget("w", size=2), "apply", field_manager="user")
    body = widget("w", size=9)
    body["status"] = {"ready": True}
    out = await mem.patch(GADGET, body, "apply", field_manager="controller", subresource="status")
    assert out["spec"] == {"size": 2}  # a status apply leaves the spec alone
    assert out["status"] == {"ready": True}
    [e] = [x for x in out["metadata"]["managedFields"] if x["manager"] == "controller"]
    assert e["subresource"] == "status"
    assert e["operation"] == "Apply"
    assert set(e["fieldsV1"]) == {"f:status"}
    with pytest.raises(NotFound):
        await mem.patch(
            ObjectRef(group="example.com", kind="Widget", namespace="default", name="none"),
            widget("none"),
            "apply",
            field_manager="controller",
            subresource="status",
        )


async def test_one_manager_applies_the_object_and_its_status(mem: SqliteStore) -> None:
    await mem.create(crd())
    await mem.patch(GADGET, widget("w", size=2), "apply", field_manager="ctl")
    body = widget("w")
    body["status"] = {"ready": True}
    await mem.patch(GADGET, body, "apply", field_manager="ctl", subresource="status")
    out = await mem.patch(GADGET, widget("w", size=3), "apply", field_manager="ctl")
    entries = {e.get("subresource", ""): e for e in out["metadata"]["managedFields"]}
    assert set(entries) == {"", "status"}  # two Apply entries of one manager
    assert "f:status" not in entries[""]["fieldsV1"]
    assert set(entries["status"]["fieldsV1"]) == {"f:status"}
    assert out["spec"] == {"size": 3}
    assert out["status"] == {"ready": True}  # the main apply does not remove status


async def test_batch_apply_ops(mem: SqliteStore) -> None:
    ops = [
        BatchOp(op=BatchOpKind.PATCH, ref=CM, patch=configmap("c", a="1"), patch_type="apply"),
        BatchOp(op=BatchOpKind.PATCH, ref=WEB, patch=deployment("web"), patch_type="apply"),
    ]
    out = await mem.batch(ops, field_manager="gitkrm")
    assert [managers(o).keys() for o in out] == [{("gitkrm", "Apply")}] * 2
    conflicting = [
        BatchOp(
            op=BatchOpKind.PATCH, ref=WEB, patch=deployment("web", replicas=4), patch_type="apply"
        )
    ]
    with pytest.raises(Conflict, match=r"op 0 \(Deployment default/web\)"):
        await mem.batch(conflicting, field_manager="other")
    forced = await mem.batch(conflicting, field_manager="other", force=True)
    assert forced[0]["spec"]["replicas"] == 4


async def test_cluster_scoped_kinds_and_crds_are_applied(mem: SqliteStore) -> None:
    ns_ref = ObjectRef(group="", kind="Namespace", name="team")
    ns = await mem.patch(
        ns_ref, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}, "apply",
        field_manager="me",
    )  # fmt: skip
    assert "namespace" not in ns["metadata"]
    assert ns["status"] == {"phase": "Active"}
    crd_ref = ObjectRef(
        group="apiextensions.k8s.io", kind="CustomResourceDefinition", name="widgets.example.com"
    )
    await mem.patch(crd_ref, crd(), "apply", field_manager="me")
    ref = ObjectRef(group="example.com", kind="Widget", namespace="team", name="w")
    out = await mem.patch(ref, widget("w", "team", size=4), "apply", field_manager="me")
    assert out["spec"] == {"size": 4}
    assert managers(out)[("me", "Apply")]["f:spec"] == {"f:size": {}}


async def test_batch_force_takes_fields_over(mem: SqliteStore) -> None:
    await mem.patch(CM, configmap("c", a="1"), "apply", field_manager="one")
    op = BatchOp(op=BatchOpKind.PATCH, ref=CM, patch=configmap("c", a="2"), patch_type="apply")
    with pytest.raises(Conflict):
        await mem.batch([op], field_manager="two")
    [out] = await mem.batch([op], field_manager="two", force=True)
    assert out["data"] == {"a": "2"}
    assert managers(out)[("two", "Apply")]["f:data"] == {"f:a": {}}
