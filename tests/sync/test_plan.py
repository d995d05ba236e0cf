"""The plan as a pure function of desired objects, inventory and live objects."""

from __future__ import annotations

import contextlib
from typing import Any

import orjson
import pytest

from gitkrm.errors import AlreadyExists
from gitkrm.krm import GVK, ObjectRef
from gitkrm.patch import PatchMeta
from gitkrm.schema import patch_meta_for
from gitkrm.store import Store
from gitkrm.sync.desired import Desired, make_desired
from gitkrm.sync.options import AdoptionPolicy, IgnoreDifference, SyncOptions
from gitkrm.sync.plan import Op, Plan, Step, make_plan, narrowed
from gitkrm.sync.results import Action
from tests.sync.sync_helpers import configmap, deployment, desired

OPTS = SyncOptions(source_name="src", agent_name="agent")
LA = "kubectl.kubernetes.io/last-applied-configuration"


def meta(gvk: GVK) -> PatchMeta | None:
    return patch_meta_for(gvk) if gvk.group != "example.com" else None


def plan_one(
    d: Desired,
    live: dict[str, Any] | None,
    *,
    options: SyncOptions = OPTS,
    revision: str = "rev-2",
    inventory: frozenset[str] = frozenset(),
) -> Step:
    p = make_plan(
        revision=revision,
        desired=[d],
        inventory=inventory,
        live={d.ref: live},
        options=options,
        meta=meta,
    )
    assert len(p.steps) == 1
    return p.steps[0]


async def applied(store: Store, d: Desired, revision: str = "rev-1") -> dict[str, Any]:
    """The live object after creating `d` as the plan says."""
    await ensure_ns(store)
    step = plan_one(d, None, revision=revision)
    assert step.op is Op.CREATE
    assert step.body is not None
    return await store.create(step.body)


async def ensure_ns(store: Store) -> None:
    with contextlib.suppress(AlreadyExists):
        await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})


def test_an_absent_object_is_created_with_labels_and_annotations() -> None:
    (d,) = desired(deployment())
    step = plan_one(d, None, revision="abc123")
    assert step.op is Op.CREATE
    assert step.body is not None
    md = step.body["metadata"]
    assert md["labels"] == {"gitkrm.io/source": "src"}
    assert md["annotations"]["gitkrm.io/revision"] == "abc123"
    assert md["annotations"][LA] == d.applied
    assert '"gitkrm.io/revision"' not in d.applied
    assert d.applied.startswith('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{')
    assert "labels" not in d.obj["metadata"].get("annotations", {})


async def test_reapplying_to_the_defaulted_live_object_changes_nothing(store: Store) -> None:
    (d,) = desired(deployment())
    live = await applied(store, d)
    assert live["spec"]["strategy"]["type"] == "RollingUpdate"  # a server default
    step = plan_one(d, live)
    assert step.op is Op.UNCHANGED
    assert step.patch is None


async def test_a_changed_field_is_patched_with_revision_and_precondition(store: Store) -> None:
    (d,) = desired(deployment())
    live = await applied(store, d)
    (d2,) = desired(deployment(image="nginx:2"))
    step = plan_one(d2, live, revision="rev-2")
    assert step.op is Op.PATCH
    assert step.patch_type == "strategic"
    assert step.patch is not None
    pmd = step.patch["metadata"]
    assert pmd["resourceVersion"] == live["metadata"]["resourceVersion"]
    assert pmd["annotations"]["gitkrm.io/revision"] == "rev-2"
    assert pmd["annotations"][LA] == d2.applied
    out = await store.patch(d2.ref, step.patch, "strategic")
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert plan_one(d2, out).op is Op.UNCHANGED


async def test_a_field_removed_from_git_is_removed_live(store: Store) -> None:
    extra = "  minReadySeconds: 5\n"
    (d,) = desired(deployment(extra_spec=extra))
    live = await applied(store, d)
    assert live["spec"]["minReadySeconds"] == 5
    (d2,) = desired(deployment())
    step = plan_one(d2, live)
    assert step.op is Op.PATCH
    assert step.patch is not None
    out = await store.patch(d2.ref, step.patch, "strategic")
    assert "minReadySeconds" not in out["spec"]


async def test_drift_on_git_fields_is_set_back_and_other_fields_are_kept(store: Store) -> None:
    (d,) = desired(deployment(replicas=2))
    await applied(store, d)
    edited = await store.patch(
        d.ref,
        {
            "spec": {"replicas": 7},
            "metadata": {"labels": {"team": "x"}, "annotations": {"note": "hi"}},
        },
        "strategic",
    )
    step = plan_one(d, edited)
    assert step.op is Op.PATCH
    assert step.patch is not None
    out = await store.patch(d.ref, step.patch, "strategic")
    assert out["spec"]["replicas"] == 2
    assert out["metadata"]["labels"]["team"] == "x"
    assert out["metadata"]["annotations"]["note"] == "hi"


async def test_ignored_differences_are_neither_reported_nor_set_back(store: Store) -> None:
    opts = SyncOptions(
        source_name="src",
        agent_name="agent",
        ignore_differences=(
            IgnoreDifference(group="apps", kind="Deployment", json_pointers=("/spec/replicas",)),
        ),
    )
    (d,) = desired(deployment(replicas=2))
    live = await applied(store, d)
    scaled = await store.patch(d.ref, {"spec": {"replicas": 9}}, "strategic")
    assert plan_one(d, scaled, options=opts).op is Op.UNCHANGED
    (d3,) = desired(deployment(replicas=3, image="nginx:3"))
    step = plan_one(d3, scaled, options=opts)
    assert step.op is Op.PATCH
    assert step.patch is not None
    assert "replicas" not in step.patch.get("spec", {})
    out = await store.patch(d.ref, step.patch, "strategic")
    assert out["spec"]["replicas"] == 9
    # Narrowed to another name: not ignored for this one.
    other = SyncOptions(
        source_name="src",
        agent_name="agent",
        ignore_differences=(
            IgnoreDifference(
                group="apps", kind="Deployment", json_pointers=("/spec/replicas",), name="x"
            ),
        ),
    )
    assert plan_one(d, scaled, options=other).op is Op.PATCH
    assert live["spec"]["replicas"] == 2


async def test_reconcile_disabled_leaves_the_object_alone(store: Store) -> None:
    (d,) = desired(deployment())
    live = await applied(store, d)
    (d2,) = desired(deployment(image="x:2", annotations="    gitkrm.io/reconcile: disabled\n"))
    assert plan_one(d2, live).op is Op.SKIP
    marked = await store.patch(
        d.ref, {"metadata": {"annotations": {"gitkrm.io/reconcile": "disabled"}}}, "strategic"
    )
    (d3,) = desired(deployment(image="x:3"))
    assert plan_one(d3, marked).op is Op.SKIP
    # Absent: created anyway (there is nothing to leave alone).
    assert plan_one(d2, None).op is Op.CREATE


def unowned(d: Desired, **labels: str) -> dict[str, Any]:
    md = dict(d.obj["metadata"])
    md["labels"] = labels
    md["resourceVersion"] = "5"
    md["uid"] = "u-1"
    return {**d.obj, "metadata": md}


def test_an_unowned_object_is_refused_unless_adoption_allows() -> None:
    (d,) = desired(configmap("c"))
    step = plan_one(d, unowned(d))
    assert step.op is Op.REFUSE
    assert "no gitkrm source owns it" in step.message
    adopting = SyncOptions(
        source_name="src", agent_name="agent", adoption=AdoptionPolicy.IF_UNOWNED
    )
    step = plan_one(d, unowned(d), options=adopting)
    assert step.op is Op.PATCH
    assert step.adopt
    assert step.message == "adopted"
    assert step.patch is not None
    assert step.patch["metadata"]["labels"]["gitkrm.io/source"] == "src"
    theirs = unowned(d, **{"gitkrm.io/source": "other"})
    always = SyncOptions(source_name="src", agent_name="agent", adoption=AdoptionPolicy.ALWAYS)
    assert plan_one(d, theirs, options=always).op is Op.REFUSE


def test_a_create_namespace_namespace_another_source_owns_is_used_as_it_is() -> None:
    """Two Argo CD Applications with CreateNamespace=true and one destination namespace:
    the second finds it made by the first, as Argo CD does, and is not refused."""
    ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shared\n"
    (d,) = desired(ns, path="(syncOptions: CreateNamespace=true)")
    step = plan_one(d, unowned(d, **{"gitkrm.io/source": "other"}))
    assert step.op is Op.SKIP
    assert 'owned by gitkrm source "other"' in step.message
    (in_git,) = desired(ns)  # the same Namespace in the revision's files is refused
    assert plan_one(in_git, unowned(in_git, **{"gitkrm.io/source": "other"})).op is Op.REFUSE


def test_an_object_being_deleted_fails_for_now() -> None:
    (d,) = desired(configmap("c"))
    live = unowned(d, **{"gitkrm.io/source": "src"})
    live["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    step = plan_one(d, live)
    assert step.op is Op.FAIL
    assert "being deleted" in step.message


def test_custom_resources_use_a_json_merge_patch() -> None:

    doc = orjson.dumps(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "apps", "labels": {"gitkrm.io/source": "src"}},
            "spec": {"size": 3},
        },
        option=orjson.OPT_SORT_KEYS,
    )
    d, _ = make_desired(
        doc=doc,
        api_version="example.com/v1",
        kind="Widget",
        name="w",
        namespace="apps",
        path="w.yaml",
        line=1,
    )
    assert d is not None
    live = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {
            "name": "w",
            "namespace": "apps",
            "labels": {"gitkrm.io/source": "src"},
            "resourceVersion": "3",
        },
        "spec": {"size": 2},
    }
    step = plan_one(d, live)
    assert step.op is Op.PATCH
    assert step.patch_type == "merge"
    assert step.patch is not None
    assert step.patch["spec"] == {"size": 3}


def owned_live(name: str, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "apps",
            "uid": f"uid-{name}",
            "labels": {"gitkrm.io/source": "src"},
            "annotations": annotations,
        },
    }


def test_prunes_come_last_with_uid_preconditions_and_respect_opt_outs() -> None:
    (keep,) = desired(configmap("keep"))
    refs = {n: ObjectRef(group="", kind="ConfigMap", name=n, namespace="apps") for n in "abcde"}
    inv = frozenset({keep.key} | {f"apps_{n}__ConfigMap" for n in refs})
    live: dict[ObjectRef, Any] = {
        keep.ref: None,
        refs["a"]: owned_live("a"),
        refs["b"]: owned_live("b", **{"gitkrm.io/prune": "disabled"}),
        refs["c"]: None,
        refs["d"]: {
            **owned_live("d"),
            "metadata": {**owned_live("d")["metadata"], "labels": {"gitkrm.io/source": "other"}},
        },
        refs["e"]: owned_live("e", **{"gitkrm.io/reconcile": "disabled"}),
    }
    p = make_plan(revision="r", desired=[keep], inventory=inv, live=live, options=OPTS, meta=meta)
    assert p.steps[0].op is Op.CREATE
    by_name = {s.ref.name: s for s in p.steps[1:]}
    assert by_name["a"].op is Op.PRUNE
    assert by_name["a"].uid == "uid-a"
    assert by_name["b"].op is Op.ORPHAN
    assert by_name["c"].op is Op.FORGET
    assert by_name["d"].op is Op.FORGET
    assert by_name["e"].op is Op.ORPHAN
    no_prune = SyncOptions(source_name="src", agent_name="agent", prune=False)
    p2 = make_plan(
        revision="r", desired=[keep], inventory=inv, live=live, options=no_prune, meta=meta
    )
    assert {s.ref.name: s.op for s in p2.steps[1:]}["a"] is Op.ORPHAN


def test_union_and_narrowed_inventory() -> None:
    ds = desired(
        configmap("new")
        + "---\n"
        + configmap("mine")
        + "---\n"
        + configmap("theirs")
        + "---\n"
        + configmap("bad")
    )
    new, mine, theirs, bad = ds
    live: dict[ObjectRef, Any] = {
        new.ref: None,
        mine.ref: owned_live("mine"),
        theirs.ref: {
            **owned_live("theirs"),
            "metadata": {**owned_live("theirs")["metadata"], "labels": {}},
        },
        bad.ref: owned_live("bad"),
        ObjectRef(group="", kind="ConfigMap", name="old", namespace="apps"): owned_live("old"),
        ObjectRef(group="", kind="ConfigMap", name="stuck", namespace="apps"): owned_live("stuck"),
    }
    inv = frozenset({mine.key, bad.key, "apps_old__ConfigMap", "apps_stuck__ConfigMap"})
    p = make_plan(revision="r", desired=ds, inventory=inv, live=live, options=OPTS, meta=meta)
    ops = {s.ref.name: s.op for s in p.steps}
    assert ops["theirs"] is Op.REFUSE
    assert p.union == inv | {new.key}  # never the refused one
    actions = {
        "new": Action.CREATED,
        "mine": Action.UNCHANGED,
        "theirs": Action.REFUSED,
        "bad": Action.FAILED,
        "old": Action.PRUNED,
        "stuck": Action.FAILED,
    }
    after = narrowed(p, [actions[s.ref.name] for s in p.steps])
    assert after == {new.key, mine.key, bad.key, "apps_stuck__ConfigMap"}


def test_in_sync_objects_are_unchanged_without_being_read() -> None:
    (d,) = desired(configmap("c"))
    p = make_plan(
        revision="r",
        desired=[d],
        inventory=frozenset({d.key}),
        live={},
        options=OPTS,
        meta=meta,
        in_sync={d.key},
    )
    assert [(s.op, s.live) for s in p.steps] == [(Op.UNCHANGED, None)]
    assert p.in_sync
    assert not Plan(revision="r", steps=(), inventory=frozenset(), errors=("x",)).in_sync


@pytest.mark.parametrize(
    "pointer", ["/spec/replicas", "/metadata/labels/app.kubernetes.io~1managed-by"]
)
def test_ignore_pointer_syntax(pointer: str) -> None:
    IgnoreDifference(group="apps", kind="Deployment", json_pointers=(pointer,))
