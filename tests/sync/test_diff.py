"""`gitkrm diff` text: kubectl-diff-style headers, created, patched and pruned objects."""

from __future__ import annotations

from typing import Any

from gitkrm.krm import GVK, ObjectRef
from gitkrm.patch import PatchMeta
from gitkrm.schema import patch_meta_for
from gitkrm.sync.diff import diff_text
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.plan import Op, Plan, Step, make_plan
from tests.sync.sync_helpers import configmap, desired

OPTS = SyncOptions(source_name="src", agent_name="agent")


def meta(gvk: GVK) -> PatchMeta | None:
    return patch_meta_for(gvk)


def live_of(text: str, **data: str) -> dict[str, Any]:
    (d,) = desired(text)
    md = {
        **d.obj["metadata"],
        "resourceVersion": "7",
        "uid": "u",
        "managedFields": [{"manager": "x"}],
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": d.applied,
            "gitkrm.io/revision": "r1",
        },
    }
    return {**d.obj, "metadata": md, "data": data or d.obj.get("data")}


def test_created_patched_and_pruned_objects() -> None:
    (new,) = desired(configmap("new"))
    (changed,) = desired(configmap("changed", data="a: '2'"))
    old_live = live_of(configmap("changed"))
    gone = ObjectRef(group="", kind="ConfigMap", name="gone", namespace="apps")
    gone_live = live_of(configmap("gone"))
    plan = make_plan(
        revision="r2",
        desired=[new, changed],
        inventory=frozenset({changed.key, "apps_gone__ConfigMap"}),
        live={new.ref: None, changed.ref: old_live, gone: gone_live},
        options=OPTS,
        meta=meta,
    )
    text = diff_text(plan, meta)
    assert text.startswith(
        "diff -u -N live/v1.ConfigMap.apps.new merged/v1.ConfigMap.apps.new\n"
        "--- live/v1.ConfigMap.apps.new\n"
        "+++ merged/v1.ConfigMap.apps.new\n"
        "@@ -0,0 +1,"
    )
    assert "+  name: new\n" in text
    assert '-  a: "1"\n+  a: "2"\n' in text
    assert "-    gitkrm.io/revision: r1\n" in text
    assert "+    gitkrm.io/revision: r2\n" in text
    assert "managedFields" not in text
    assert "diff -u -N live/v1.ConfigMap.apps.gone merged/v1.ConfigMap.apps.gone\n" in text
    assert "-  name: gone\n" in text


def test_in_sync_plans_print_nothing_and_refusals_print_a_comment() -> None:
    (d,) = desired(configmap("c"))
    same = make_plan(
        revision="r",
        desired=[d],
        inventory=frozenset(),
        live={d.ref: live_of(configmap("c"))},
        options=OPTS,
        meta=meta,
    )
    assert same.in_sync
    assert diff_text(same, meta) == ""
    refused = Plan(
        revision="r",
        steps=(
            Step(
                Op.REFUSE, d.ref, d.key, desired=d, message='conflict: owned by gitkrm source "x"'
            ),
        ),
        inventory=frozenset(),
    )
    assert (
        diff_text(refused, meta)
        == '# ConfigMap apps/c: refuse: conflict: owned by gitkrm source "x"\n'
    )
    failed = Plan(revision="r", steps=(), inventory=frozenset(), errors=("a.yaml:1: broken",))
    assert diff_text(failed, meta) == "# a.yaml:1: broken\n"


def test_secrets_are_redacted_in_diffs() -> None:
    text = (
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: apps}\n"
        "data: {k: %s, same: QQ==}\n"
    )
    (d,) = desired(text % "bmV3")
    live = live_of(text % "b2xk")
    plan = make_plan(
        revision="r2",
        desired=[d],
        inventory=frozenset(),
        live={d.ref: live},
        options=OPTS,
        meta=meta,
    )
    out = diff_text(plan, meta)
    assert "bmV3" not in out
    assert "b2xk" not in out
    assert "QQ==" not in out
    assert "-  k: '*** (before)'\n+  k: '*** (after)'\n" in out
    assert "  same: '***'\n" in out
    assert "kubectl.kubernetes.io/last-applied-configuration: '*** (before)'" in out
