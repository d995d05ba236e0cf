"""The engine on bad revisions, ordering, immutable fields, conflicts and crashes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

import pytest

from gitkrm.krm import Obj, ObjectRef
from gitkrm.source import GitSource
from gitkrm.source.snapshot import MODE_SYMLINK, FileEntry, MemoryBlobs, Snapshot, git_blob_id
from gitkrm.store import BatchOp, Store
from gitkrm.store.protocol import WriteKeywords
from gitkrm.sync import inventory, live
from gitkrm.sync.apply import Applier
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.plan import Plan
from gitkrm.sync.results import Action, SyncStatus
from tests.sync.conftest import EngineFactory
from tests.sync.sync_helpers import Remote, configmap, deployment, namespace, snapshot
from tests.sync.test_engine import (
    actions,
    cm_ref,
    deploy_ref,
    get,
    inventory_keys,
    seed,
    seeded_engine,
    sync,
)
from tests.sync.test_render import BOMB, CRD


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("apiVersion: v1\nkind: [unclosed\n", "bad.yaml:3: invalid YAML"),
        (BOMB, "too many alias expansions"),
        ("apiVersion: v1\nkind: ConfigMap\nkind: Secret\n", 'duplicate key "kind"'),
        (configmap("settings"), "duplicate object"),
        (
            "apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g, namespace: apps}\n",
            "unknown kind",
        ),
        (deployment("w2").replace("replicas: 2", "replicas: lots"), "spec.replicas"),
        (deployment("w3").replace("labels: {app: w3}", "labels: {app: nope}"), "does not match"),
        (
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: x1, namespace: apps}\n",
            "cluster-scoped",
        ),
        (configmap("c", ns="nowhere"), 'namespace "nowhere" does not exist'),
        (b"apiVersion: v1\x00\n", "binary file"),
        (b"apiVersion: v1\nkind: \xc3\x28\n", "not UTF-8"),
    ],
)
async def test_a_bad_revision_applies_nothing_and_a_fixed_one_recovers(
    store: Store,
    remote: Remote,
    source: GitSource,
    make_engine: EngineFactory,
    content: str | bytes,
    expected: str,
) -> None:
    engine = await seeded_engine(remote, source, make_engine)
    rv = await live.current_revision(store)
    remote.write("apps/cm.yaml", configmap("settings", data="mode: new"))
    remote.write("bad.yaml", content)
    bad_sha = remote.commit("bad")
    result = await sync(engine, source)
    assert result.status is SyncStatus.FAILED
    assert result.revision == bad_sha
    assert result.objects == ()
    assert any(e.startswith("bad.yaml") and expected in e for e in result.errors), result.errors
    assert await live.current_revision(store) == rv  # nothing written
    assert engine.synced_revision != bad_sha
    drift = await engine.check_drift()  # keeps the last synced state
    assert drift.ok
    remote.remove("bad.yaml")
    remote.commit("fix")
    fixed = await sync(engine, source)
    assert fixed.ok, fixed.problems()
    assert (await store.get(cm_ref("settings")))["data"] == {"mode": "new"}


def handmade(files: dict[str, bytes], extra: dict[str, FileEntry]) -> Snapshot:
    blobs = {git_blob_id(d): d for d in files.values()}
    entries = {p: FileEntry(p, git_blob_id(d), len(d)) for p, d in files.items()}
    for path, entry in extra.items():
        entries[path] = entry
        if entry.mode == MODE_SYMLINK:
            blobs[entry.blob] = b"../../etc/passwd"
    return Snapshot(revision="r-bad", files=entries, reader=MemoryBlobs(blobs))


async def test_symlink_escapes_and_huge_files_refuse_the_revision(
    store: Store, make_engine: EngineFactory
) -> None:
    engine = make_engine()
    good = {"ns.yaml": namespace("apps").encode(), "cm.yaml": configmap("c").encode()}
    link = b"../../etc/passwd"
    snap = handmade(
        good,
        {
            "link.yaml": FileEntry("link.yaml", git_blob_id(link), len(link), MODE_SYMLINK),
            "huge.yaml": FileEntry("huge.yaml", "f" * 40, 9 * 1024 * 1024),
        },
    )
    result = await engine.sync(snap)
    assert result.status is SyncStatus.FAILED
    assert sorted(result.errors) == [
        "huge.yaml: file is 9,437,184 bytes, over the limit of 8,388,608",
        "link.yaml: symlink to '../../etc/passwd' leaves the repository",
    ]
    assert await get(store, cm_ref("c")) is None


EARLY_ROLE = """apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: early, namespace: apps, annotations: {gitkrm.io/wave: '-1'}}
rules: []
"""
ROLE_EARLY = ObjectRef(
    group="rbac.authorization.k8s.io", version="v1", kind="Role", name="early", namespace="apps"
)


async def test_waves_and_dependencies_set_the_apply_order(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    remote.write("ns.yaml", namespace("apps"))
    remote.write("late.yaml", configmap("late", extra="  annotations: {gitkrm.io/wave: '1'}\n"))
    # A Role (Current at once on a store without controllers: waves wait for health) in
    # wave -1 goes before the ConfigMaps of wave 0, which Helm's kind order puts first.
    remote.write("early.yaml", EARLY_ROLE)
    dep = "  annotations: {config.kubernetes.io/depends-on: /namespaces/apps/ConfigMap/b}\n"
    remote.write("a.yaml", configmap("a", extra=dep))
    remote.write("b.yaml", configmap("b"))
    remote.commit()
    engine = make_engine()
    result = await sync(engine, source)
    assert result.ok, result.problems()
    assert [f"{o.ref.kind}/{o.ref.name}" for o in result.objects] == [
        "Namespace/apps",
        "Role/early",
        "ConfigMap/b",
        "ConfigMap/a",
        "ConfigMap/late",
    ]
    created = [
        int((await store.get(r))["metadata"]["resourceVersion"])
        for r in (ROLE_EARLY, cm_ref("b"), cm_ref("a"), cm_ref("late"))
    ]
    assert created == sorted(created)
    rv = await live.current_revision(store)
    cycle = "  annotations: {config.kubernetes.io/depends-on: /namespaces/apps/ConfigMap/a}\n"
    remote.write("b.yaml", configmap("b", data="x: '2'", extra=cycle))
    remote.commit("cycle")
    bad = await sync(engine, source)
    assert bad.status is SyncStatus.FAILED
    assert bad.errors == (
        "a.yaml:1: ConfigMap apps/a: dependency cycle: ConfigMap apps/a -> ConfigMap apps/b "
        "-> ConfigMap apps/a",
    )
    assert await live.current_revision(store) == rv
    later = "  annotations: {config.kubernetes.io/depends-on: /namespaces/apps/ConfigMap/late}\n"
    remote.write("b.yaml", configmap("b", extra=later))
    remote.commit("into a later wave")
    bad = await sync(engine, source)
    assert "which is applied later (wave 1)" in bad.errors[0]


IMMUTABLE = deployment("web").replace("{app: web}", "{app: web2}")


async def test_an_immutable_change_fails_unless_forced(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    engine = await seeded_engine(remote, source, make_engine)
    uid = (await store.get(deploy_ref()))["metadata"]["uid"]
    remote.write("apps/web.yaml", IMMUTABLE)
    remote.write("apps/cm.yaml", configmap("settings", data="mode: changed"))
    remote.commit("new selector")
    result = await sync(engine, source)
    assert result.status is SyncStatus.FAILED
    web = next(o for o in result.objects if o.ref.name == "web")
    assert web.action is Action.FAILED
    assert "immutable" in web.message
    assert "gitkrm.io/force: enabled" in web.message
    assert (web.path, web.line) == ("apps/web.yaml", 1)
    # The rest of the revision was applied (the batch fell back to single writes).
    assert actions(result)["ConfigMap/settings"] is Action.CONFIGURED
    assert (await store.get(cm_ref("settings")))["data"] == {"mode": "changed"}
    assert "apps_web_apps_Deployment" in await inventory_keys(store)
    forced = IMMUTABLE.replace(
        "  namespace: apps\n",
        "  namespace: apps\n  annotations:\n    gitkrm.io/force: enabled\n",
        1,
    )
    remote.write("apps/web.yaml", forced)
    remote.commit("force it")
    result = await sync(engine, source)
    assert result.ok, result.problems()
    web = next(o for o in result.objects if o.ref.name == "web")
    assert web.action is Action.CONFIGURED
    assert web.message.startswith("re-created (gitkrm.io/force: enabled)")
    now = await store.get(deploy_ref())
    assert now["metadata"]["uid"] != uid
    assert now["spec"]["selector"]["matchLabels"] == {"app": "web2"}


class RacingStore:
    """A store where someone else edits an object right before gitkrm's first batch."""

    def __init__(self, inner: Store, ref: ObjectRef, patch: Obj) -> None:
        self._inner = inner
        self._ref = ref
        self._patch = patch
        self.raced = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def batch(self, ops: Sequence[BatchOp], **options: Unpack[WriteKeywords]) -> list[Obj]:
        if not self.raced and any(op.ref == self._ref for op in ops):
            self.raced = True
            await self._inner.patch(self._ref, self._patch, "merge")
        return await self._inner.batch(ops, **options)


async def test_a_concurrent_change_is_read_again_and_merged(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    await seeded_engine(remote, source, make_engine)
    remote.write("apps/web.yaml", deployment(image="nginx:2"))
    remote.commit()
    racing = RacingStore(store, deploy_ref(), {"metadata": {"labels": {"someone": "else"}}})
    engine = make_engine(target=racing)
    result = await engine.sync(await source.snapshot())
    assert racing.raced
    assert result.ok, result.problems()
    assert actions(result)["Deployment/web"] is Action.CONFIGURED
    web = await store.get(deploy_ref())
    assert web["metadata"]["labels"]["someone"] == "else"
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"


async def test_a_crash_between_inventory_union_and_apply_converges(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    seed(remote)
    remote.write("apps/old.yaml", configmap("old"))
    remote.commit()
    assert (await sync(make_engine(), source)).ok
    remote.remove("apps/old.yaml")
    remote.write("apps/new.yaml", configmap("new"))
    remote.write("apps/cm.yaml", configmap("settings", data="mode: v2"))
    remote.commit("v2")
    snap = await source.snapshot()
    crashed = make_engine()
    plan = await crashed.plan(snap)
    # What a sync does before it dies: the union first, then only part of the apply.
    opts = SyncOptions(source_name="src", agent_name="agent")
    current = await inventory.read(store, source="src", inventory_id="agent.src")
    await inventory.write(
        store, plan.union, current=current, source="src", inventory_id="agent.src"
    )
    partial = Plan(revision=plan.revision, steps=plan.steps[:2], inventory=plan.inventory)
    meta = crashed._parts.meta
    await Applier(store, options=opts, revision=plan.revision, meta=meta).apply(partial)
    assert "apps_new__ConfigMap" in await inventory_keys(store)
    assert "apps_old__ConfigMap" in await inventory_keys(store)
    restarted = make_engine()
    result = await restarted.sync(snap)
    assert result.ok, result.problems()
    assert actions(result)["ConfigMap/old"] is Action.PRUNED
    assert await get(store, cm_ref("new")) is not None
    assert (await store.get(cm_ref("settings")))["data"] == {"mode": "v2"}
    assert await inventory_keys(store) == {
        "_apps__Namespace",
        "apps_web_apps_Deployment",
        "apps_settings__ConfigMap",
        "apps_new__ConfigMap",
    }
    assert (await restarted.sync(snap)).counts["unchanged"] == 4


async def test_a_crash_before_narrowing_converges(store: Store, make_engine: EngineFactory) -> None:
    files = {"ns.yaml": namespace("apps"), "a.yaml": configmap("a"), "b.yaml": configmap("b")}
    assert (await make_engine().sync(snapshot(files, "r1"))).ok
    del files["b.yaml"]
    await store.delete(cm_ref("b"))  # pruned, but the inventory was not narrowed
    result = await make_engine().sync(snapshot(files, "r2"))
    assert result.ok
    assert actions(result)["ConfigMap/b"] is Action.SKIPPED  # already gone: forgotten
    assert await inventory_keys(store) == {"_apps__Namespace", "apps_a__ConfigMap"}


async def test_crds_and_their_custom_resources_in_one_revision(
    store: Store, make_engine: EngineFactory
) -> None:
    widget = (
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: apps}\n"
        "spec: {size: %d}\n"
    )
    files = {"ns.yaml": namespace("apps"), "w.yaml": widget % 1, "crd.yaml": CRD}
    engine = make_engine()
    result = await engine.sync(snapshot(files, "r1"))
    assert result.ok, result.problems()
    assert [o.ref.kind for o in result.objects] == [
        "Namespace",
        "CustomResourceDefinition",
        "Widget",
    ]
    files["w.yaml"] = widget % 2
    result = await engine.sync(snapshot(files, "r2"))
    assert actions(result)["Widget/w"] is Action.CONFIGURED
    w = await store.get(
        ObjectRef(group="example.com", kind="Widget", name="w", namespace="apps", version="v1")
    )
    assert w["spec"] == {"size": 2}
    assert (await engine.sync(snapshot(files, "r2"))).counts["unchanged"] == 3


async def test_an_apply_time_failure_is_isolated(store: Store, make_engine: EngineFactory) -> None:
    files = {"ns.yaml": namespace("apps"), "a.yaml": configmap("a")}
    engine = make_engine()
    assert (await engine.sync(snapshot(files, "r1"))).ok
    doomed = ObjectRef(group="", kind="Namespace", name="doomed")
    await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}})
    await store.delete(doomed)  # terminating: nothing can be created in it
    files["b.yaml"] = configmap("b")
    files["c.yaml"] = configmap("c", ns="doomed")
    files["d.yaml"] = configmap("d")
    result = await engine.sync(snapshot(files, "r2"))
    assert result.status is SyncStatus.FAILED
    assert actions(result) == {
        "Namespace/apps": Action.UNCHANGED,
        "ConfigMap/a": Action.UNCHANGED,
        "ConfigMap/b": Action.CREATED,
        "ConfigMap/c": Action.FAILED,
        "ConfigMap/d": Action.CREATED,
    }
    failed = next(o for o in result.objects if o.ref.name == "c")
    assert "being terminated" in failed.message
    assert (failed.path, failed.line) == ("c.yaml", 1)
    assert "doomed_c__ConfigMap" not in await inventory_keys(store)
    # Failed objects are tried again on the next sync.
    again = await engine.sync(snapshot(files, "r2"))
    assert actions(again)["ConfigMap/c"] is Action.FAILED
