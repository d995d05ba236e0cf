"""ValidatingAdmissionPolicies enforced by the SQLite store on every write: create, update,
patch, delete and batch writes, a policy taking effect inside the batch that writes it, and
rollback forgetting a policy that was never committed."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import Forbidden, Invalid
from gitkrm.krm import ObjectRef
from gitkrm.store.protocol import BatchOp, BatchOpKind
from gitkrm.store.sqlite import SqliteStore


def policy(operations: list[str], expression: str, **validation: Any) -> list[dict[str, Any]]:
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": operations,
            "resources": ["configmaps"]}  # fmt: skip
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "cm"},
            "spec": {
                "matchConstraints": {"resourceRules": [rule]},
                "validations": [{"expression": expression, **validation}],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "cm-binding"},
            "spec": {"policyName": "cm", "validationActions": ["Deny"]},
        },
    ]


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": data}  # fmt: skip


REF = ObjectRef(group="", kind="ConfigMap", name="keep", namespace="default")
A = ObjectRef(group="", kind="ConfigMap", name="a", namespace="default")


async def test_create_update_and_patch_are_checked(store: SqliteStore) -> None:
    for obj in policy(["CREATE", "UPDATE"], "!has(object.data) || !('secret' in object.data)"):
        await store.create(obj)
    with pytest.raises(Invalid, match="denied request: failed expression"):
        await store.create(cm("a", secret="x"))
    made = await store.create(cm("a", ok="1"))
    made["data"] = {"secret": "y"}
    with pytest.raises(Invalid):
        await store.update(made)
    with pytest.raises(Invalid):
        await store.patch(A, {"data": {"secret": "z"}}, "merge")
    assert (await store.get(A))["data"] == {"ok": "1"}


async def test_delete_is_checked_with_old_object(store: SqliteStore) -> None:
    await store.create(cm("keep", pinned="yes"))
    for obj in policy(["DELETE"], "oldObject.data.pinned != 'yes'", reason="Forbidden"):
        await store.create(obj)
    with pytest.raises(Forbidden, match=r'configmaps "keep" is forbidden: ValidatingAdmission'):
        await store.delete(REF)
    assert await store.get(REF)


async def test_a_policy_applies_inside_its_own_batch_and_rollback_forgets_it(
    store: SqliteStore,
) -> None:
    written = policy(["CREATE"], "size(object.data) < 2")
    ops = [BatchOp(op=BatchOpKind.CREATE, obj=o) for o in written]
    ops.append(BatchOp(op=BatchOpKind.CREATE, obj=cm("big", a="1", b="2")))
    with pytest.raises(Invalid, match=r"op 2 .*denied request"):
        await store.batch(ops)
    await store.create(cm("big", a="1", b="2"))  # the rolled-back policy is gone
