"""Fields another manager owns are never removed by an apply that does not own them;
shared ownership, conflicts and force (#22), ported from structured-merge-diff's
merge/multiple_appliers_test.go and apiserver's fieldmanager tests
(TestApplyStripsFields-style flows) to the store's server-side apply."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import Conflict
from gitkrm.krm import ObjectRef
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import configmap, deployment

WEB = ObjectRef(group="apps", kind="Deployment", namespace="default", name="web")
CM = ObjectRef(group="", kind="ConfigMap", namespace="default", name="c")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def owners(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


async def test_a_field_an_update_changed_stays_when_the_applier_drops_it(
    mem: SqliteStore,
) -> None:
    """multiple_appliers_test "TestMultipleAppliersFieldUnsetting"-like: after an Update
    by another manager changed b, the applier no longer owns b; dropping b from its
    configuration leaves b where it is."""
    await mem.patch(CM, configmap("c", a="1", b="2"), "apply", field_manager="apply")
    await mem.patch(CM, {"data": {"b": "3"}}, "merge", field_manager="editor")
    out = await mem.patch(CM, configmap("c", a="1"), "apply", field_manager="apply")
    assert out["data"] == {"a": "1", "b": "3"}
    assert owners(out)[("apply", "Apply")]["f:data"] == {"f:a": {}}
    assert owners(out)[("editor", "Update")]["f:data"] == {"f:b": {}}


async def test_an_annotation_another_manager_set_survives_every_apply(mem: SqliteStore) -> None:
    """The last-applied annotation kubectl's client-side apply wrote is its own: a
    server-side applier that never set it (gitkrm) neither conflicts with it nor removes
    it, re-applying or changing other fields."""
    await mem.patch(CM, configmap("c", a="1"), "apply", field_manager="gitkrm")
    live = await mem.get(CM)
    live["metadata"]["annotations"] = {LAST_APPLIED: '{"data":{"a":"1"}}'}
    await mem.update(live, field_manager="kubectl-client-side-apply")
    for value in ("1", "2", "2"):
        out = await mem.patch(CM, configmap("c", a=value), "apply", field_manager="gitkrm")
        assert out["metadata"]["annotations"] == {LAST_APPLIED: '{"data":{"a":"1"}}'}
        assert out["data"] == {"a": value}
    assert "f:metadata" in owners(out)[("kubectl-client-side-apply", "Update")]


async def test_shared_fields_stay_until_the_last_owner_lets_go(mem: SqliteStore) -> None:
    """multiple_appliers_test: two appliers of the same value share the field; it goes
    only when neither applies it any more."""
    await mem.patch(CM, configmap("c", a="1", b="2"), "apply", field_manager="one")
    await mem.patch(CM, configmap("c", b="2"), "apply", field_manager="two")
    out = await mem.patch(CM, configmap("c", a="1"), "apply", field_manager="one")
    assert out["data"] == {"a": "1", "b": "2"}
    out = await mem.patch(CM, configmap("c"), "apply", field_manager="two")
    assert out["data"] == {"a": "1"}
    assert owners(out)[("two", "Apply")] == {"f:data": {}}  # its empty data map


async def test_force_moves_ownership_and_the_loser_can_share_again(mem: SqliteStore) -> None:
    await mem.patch(WEB, deployment("web", replicas=2), "apply", field_manager="one")
    with pytest.raises(Conflict, match='conflict with "one"'):
        await mem.patch(WEB, deployment("web", replicas=4), "apply", field_manager="two")
    out = await mem.patch(
        WEB, deployment("web", replicas=4), "apply", field_manager="two", force=True
    )
    assert "f:replicas" not in owners(out)[("one", "Apply")]["f:spec"]
    # "one" drops replicas from its configuration: the value stays, "two" owns it.
    dropped = deployment("web")
    del dropped["spec"]["replicas"]
    out = await mem.patch(WEB, dropped, "apply", field_manager="one")
    assert out["spec"]["replicas"] == 4
    # "one" applies the winner's value: shared again, no conflict.
    out = await mem.patch(WEB, deployment("web", replicas=4), "apply", field_manager="one")
    assert "f:replicas" in owners(out)[("one", "Apply")]["f:spec"]
    assert "f:replicas" in owners(out)[("two", "Apply")]["f:spec"]
    # Now "two" lets go: "one" still owns it, it stays.
    out = await mem.patch(WEB, dropped, "apply", field_manager="two")
    assert out["spec"]["replicas"] == 4


async def test_conflicts_name_every_owner(mem: SqliteStore) -> None:
    await mem.patch(CM, configmap("c", a="1"), "apply", field_manager="one")
    await mem.patch(CM, configmap("c", a="1"), "apply", field_manager="two")
    with pytest.raises(Conflict) as caught:
        await mem.patch(CM, configmap("c", a="9"), "apply", field_manager="three")
    assert caught.value.message == (
        "Apply failed with 2 conflicts: conflicts with "
        '"one":\n- .data.a\nconflicts with "two":\n- .data.a'
    )
