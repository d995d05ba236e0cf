"""The sync engine in server-side apply mode: the GitOps scenarios, field ownership,
switching apply modes, immutable fields, large objects, diff."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import pytest

from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.schema import patch_meta_for, ssa_type_for
from gitkrm.source import GitSource
from gitkrm.store import Store
from gitkrm.store.kube import KubeStore
from gitkrm.sync import live
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import IgnoreDifference, SyncOptions
from gitkrm.sync.patching import applied_by_gitkrm
from gitkrm.sync.results import Action, SyncStatus
from gitkrm.sync.serverside import migration, predict
from tests.store.kube.conftest import kube, secured  # noqa: F401 (fixtures)
from tests.support.builders import managed_fields_entry
from tests.sync import test_engine, test_engine_faults
from tests.sync.conftest import EngineFactory, SourceFactory
from tests.sync.sync_helpers import Remote, configmap, deployment, desired, namespace, snapshot
from tests.sync.test_engine import CM, LA, actions, cm_ref, deploy_ref, seed, sync

SSA: Final = "server-side"
FIXTURES = {"store", "remote", "tmp_path", "source", "make_source", "make_engine"}
# The engine's scenarios that do not look at client-side apply's annotation.
SCENARIOS = [
    f
    for m in (test_engine, test_engine_faults)
    for n, f in sorted(vars(m).items())
    if n.startswith("test_")
    and n != "test_first_sync_then_nothing_to_do"
    and set(inspect.signature(f).parameters) <= FIXTURES
]


@pytest.fixture
def ssa_engine(make_engine: EngineFactory) -> EngineFactory:
    def make(**options: Any) -> SyncEngine:
        options.setdefault("apply_mode", SSA)
        return make_engine(**options)

    return make


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
async def test_engine_scenarios_in_server_side_mode(
    scenario: Callable[..., Awaitable[None]],
    store: Store,
    remote: Remote,
    tmp_path: Path,
    source: GitSource,
    make_source: SourceFactory,
    ssa_engine: EngineFactory,
) -> None:
    fixtures: dict[str, Any] = {
        "store": store,
        "remote": remote,
        "tmp_path": tmp_path,
        "source": source,
        "make_source": make_source,
        "make_engine": ssa_engine,
    }
    await scenario(**{k: fixtures[k] for k in inspect.signature(scenario).parameters})


def entries(obj: Obj) -> dict[tuple[str, str], dict[str, Any]]:
    """managedFields by (manager, operation), main resource only."""
    return {
        (e["manager"], e["operation"]): e
        for e in obj["metadata"].get("managedFields", [])
        if not e.get("subresource")
    }


def data_fields(obj: Obj) -> dict[str, set[str]]:
    """Which data keys of a ConfigMap each manager owns."""
    out: dict[str, set[str]] = {}
    for (manager, _), e in entries(obj).items():
        keys = {k[2:] for k in e["fieldsV1"].get("f:data", {}) if k.startswith("f:")}
        if keys:
            out[manager] = keys
    return out


async def test_first_sync_applies_then_nothing_to_do(
    store: Store, remote: Remote, make_source: SourceFactory, ssa_engine: EngineFactory
) -> None:
    sha = seed(remote)
    engine, source = ssa_engine(), make_source(remote.url)
    result = await sync(engine, source)
    assert result.status is SyncStatus.SUCCEEDED, result.problems()
    assert result.counts["created"] == 3
    web = await store.get(deploy_ref())
    md = web["metadata"]
    assert md["labels"]["gitkrm.io/source"] == "src"
    assert "app.kubernetes.io/managed-by" not in md["labels"]
    assert md["annotations"] == {"gitkrm.io/revision": sha}  # no last-applied annotation
    assert set(entries(web)) == {("gitkrm", "Apply")}
    owned = entries(web)[("gitkrm", "Apply")]["fieldsV1"]
    assert "f:gitkrm.io/revision" in owned["f:metadata"]["f:annotations"]
    assert "f:replicas" in owned["f:spec"]
    assert "f:strategy" not in owned["f:spec"]  # defaulted by the server: nobody's
    rv = await live.current_revision(store)
    again = await sync(ssa_engine(), source)  # a new engine reads and compares everything
    assert set(actions(again).values()) == {Action.UNCHANGED}
    assert await live.current_revision(store) == rv
    assert (await engine.check_drift()).counts["unchanged"] == 3
    assert await live.current_revision(store) == rv


async def test_a_field_removed_from_git_is_removed_unless_another_manager_owns_it(
    store: Store, remote: Remote, make_source: SourceFactory, ssa_engine: EngineFactory
) -> None:
    remote.write("ns.yaml", namespace("apps"))
    remote.write("cm.yaml", configmap("c", data="{a: '1', b: '2', c: '3'}"))
    remote.commit()
    engine, source = ssa_engine(), make_source(remote.url)
    assert (await sync(engine, source)).ok
    # Another applier applies b with the same value: b is shared.
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"b": "2"}}
    shared = await store.patch(cm_ref("c"), other, "apply", field_manager="other")
    assert data_fields(shared) == {"gitkrm": {"a", "b", "c"}, "other": {"b"}}
    remote.write("cm.yaml", configmap("c", data="{a: '1'}"))
    remote.commit("only a")
    result = await sync(engine, source)
    assert actions(result)["ConfigMap/c"] is Action.CONFIGURED
    cm = await store.get(cm_ref("c"))
    assert cm["data"] == {"a": "1", "b": "2"}  # c removed, b kept: "other" still applies it
    assert data_fields(cm) == {"gitkrm": {"a"}, "other": {"b"}}
    assert (await sync(ssa_engine(), source)).counts["unchanged"] == 2


async def test_drift_by_other_managers_is_forced_back(
    store: Store, remote: Remote, make_source: SourceFactory, ssa_engine: EngineFactory
) -> None:
    seed(remote)
    engine, source = ssa_engine(), make_source(remote.url)
    assert (await sync(engine, source)).ok
    # kubectl edit (an Update) and another applier (an Apply, force) change Git's fields.
    await store.patch(
        deploy_ref(), {"spec": {"replicas": 9}}, "merge", field_manager="kubectl-edit"
    )
    theirs = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
    theirs["data"] = {"mode": "debug", "extra": "x"}
    await store.patch(cm_ref("settings"), theirs, "apply", field_manager="other", force=True)
    plan = await engine.plan(await source.snapshot())
    text = engine.diff_text(plan)
    assert "-  replicas: 9\n+  replicas: 2\n" in text
    assert "-  mode: debug\n+  mode: prod\n" in text
    assert "managedFields" not in text
    drift = await engine.check_drift()
    assert drift.ok, drift.problems()
    assert actions(drift)["Deployment/web"] is Action.CONFIGURED
    assert actions(drift)["ConfigMap/settings"] is Action.CONFIGURED
    web = await store.get(deploy_ref())
    assert web["spec"]["replicas"] == 2
    assert "f:replicas" in entries(web)[("gitkrm", "Apply")]["fieldsV1"]["f:spec"]
    assert ("kubectl-edit", "Update") not in entries(web)  # it owned only replicas
    cm = await store.get(cm_ref("settings"))
    assert cm["data"] == {"mode": "prod", "extra": "x"}
    assert data_fields(cm) == {"gitkrm": {"mode"}, "other": {"extra"}}
    assert (await engine.check_drift()).counts["unchanged"] == 3


async def test_client_side_to_server_side_migrates_ownership(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    remote.write("ns.yaml", namespace("apps"))
    remote.write("cm.yaml", configmap("c", data="{a: '1', b: '2', c: '3'}"))
    remote.write("web.yaml", deployment())
    remote.commit()
    assert (await sync(make_engine(), source)).ok
    web_before = await store.get(deploy_ref())
    assert LA in web_before["metadata"]["annotations"]
    assert ("gitkrm", "Update") in entries(web_before)
    # The switch comes with a commit that drops b.
    remote.write("cm.yaml", configmap("c", data="{a: '1', c: '3'}"))
    remote.commit("no b")
    result = await sync(make_engine(apply_mode=SSA), source)
    assert result.ok, result.problems()
    assert actions(result)["ConfigMap/c"] is Action.CONFIGURED
    assert actions(result)["Deployment/web"] is Action.CONFIGURED  # the migration alone
    cm = await store.get(cm_ref("c"))
    assert cm["data"] == {"a": "1", "c": "3"}
    for obj in (cm, await store.get(deploy_ref())):
        assert LA not in obj["metadata"]["annotations"]
        assert set(entries(obj)) == {("gitkrm", "Apply")}
    web = await store.get(deploy_ref())
    assert web["spec"] == web_before["spec"]
    assert (
        web["metadata"]["annotations"]["gitkrm.io/revision"]
        == (web_before["metadata"]["annotations"]["gitkrm.io/revision"])
    )
    owned = entries(web)[("gitkrm", "Apply")]["fieldsV1"]["f:spec"]
    assert "f:replicas" in owned
    assert "f:strategy" not in owned  # defaulted: in gitkrm's Update entry, not applied
    rv = await live.current_revision(store)
    engine = make_engine(apply_mode=SSA)
    assert set(actions(await sync(engine, source)).values()) == {Action.UNCHANGED}
    assert await live.current_revision(store) == rv
    # Later removals are removals too.
    remote.write("cm.yaml", configmap("c", data="{a: '1'}"))
    remote.commit("no c")
    assert (await sync(engine, source)).ok
    assert (await store.get(cm_ref("c")))["data"] == {"a": "1"}


async def test_server_side_to_client_side_keeps_removing_fields(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    remote.write("ns.yaml", namespace("apps"))
    remote.write("cm.yaml", configmap("c", data="{a: '1', b: '2'}"))
    remote.write("web.yaml", deployment(extra_spec="  minReadySeconds: 5\n"))
    remote.commit()
    assert (await sync(make_engine(apply_mode=SSA), source)).ok
    # Switching back with a commit that drops fields: gitkrm's Apply entry is the
    # "original" of the three-way patch, so the dropped fields go.
    remote.write("cm.yaml", configmap("c", data="{a: '1'}"))
    remote.write("web.yaml", deployment())
    remote.commit("no b, no minReadySeconds")
    result = await sync(make_engine(), source)
    assert result.ok, result.problems()
    assert actions(result)["ConfigMap/c"] is Action.CONFIGURED
    cm = await store.get(cm_ref("c"))
    assert cm["data"] == {"a": "1"}
    assert LA in cm["metadata"]["annotations"]
    web = await store.get(deploy_ref())
    assert "minReadySeconds" not in web["spec"]
    assert web["spec"]["replicas"] == 2
    rv = await live.current_revision(store)
    assert set(actions(await sync(make_engine(), source)).values()) == {Action.UNCHANGED}
    assert await live.current_revision(store) == rv
    # And back to server-side once more: the annotation goes, nothing is left behind.
    remote.write("cm.yaml", configmap("c", data="{z: '9'}"))
    remote.commit("only z")
    assert (await sync(make_engine(apply_mode=SSA), source)).ok
    cm = await store.get(cm_ref("c"))
    assert cm["data"] == {"z": "9"}
    assert LA not in cm["metadata"]["annotations"]


def big_configmap(size: int) -> str:
    return configmap("big", data=f"blob: {'x' * size}")


async def test_a_large_configmap_needs_server_side_apply(
    store: Store, make_engine: EngineFactory
) -> None:
    files = {"ns.yaml": namespace("apps"), "big.yaml": big_configmap(600 * 1024)}
    refused = await make_engine().sync(snapshot(files, "r1"))
    # Refused before anything is written, naming the object and the way out.
    assert not refused.ok
    assert refused.objects == ()
    (problem,) = refused.problems()
    assert problem.startswith("big.yaml:1: ConfigMap apps/big: too big for client-side apply")
    assert "--apply-mode server-side" in problem
    listed = (await store.list(live.NAMESPACE))["items"]
    assert "apps" not in {n["metadata"]["name"] for n in listed}
    engine = make_engine(apply_mode=SSA)
    result = await engine.sync(snapshot(files, "r1"))
    assert result.ok, result.problems()
    assert actions(result)["ConfigMap/big"] is Action.CREATED
    big = await store.get(cm_ref("big"))
    assert len(big["data"]["blob"]) == 600 * 1024
    assert LA not in big["metadata"]["annotations"]
    files["big.yaml"] = big_configmap(610 * 1024)
    changed = await engine.sync(snapshot(files, "r2"))
    assert actions(changed)["ConfigMap/big"] is Action.CONFIGURED
    assert len((await store.get(cm_ref("big")))["data"]["blob"]) == 610 * 1024
    assert (await make_engine(apply_mode=SSA).sync(snapshot(files, "r2"))).counts["unchanged"] == 2


SECRET = """\
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: apps}
stringData: {password: hunter2-from-git}
"""


async def test_diff_redacts_secrets_in_server_side_mode(
    store: Store, make_engine: EngineFactory
) -> None:
    files = {"ns.yaml": namespace("apps"), "s.yaml": SECRET}
    engine = make_engine(apply_mode=SSA)
    assert (await engine.sync(snapshot(files, "r1"))).ok
    ref = ObjectRef(group="", kind="Secret", name="creds", namespace="apps")
    await store.patch(ref, {"data": {"password": "c3RvbGVu"}}, "merge", field_manager="x")
    plan = await engine.plan(snapshot(files, "r1"))
    assert not plan.in_sync
    text = engine.diff_text(plan)
    assert "Secret.apps.creds" in text
    for secret in ("hunter2", "aHVudGVyMi1mcm9tLWdpdA", "c3RvbGVu"):
        assert secret not in text


async def test_an_ignored_field_another_manager_changed_stays_theirs(
    store: Store, remote: Remote, make_source: SourceFactory, ssa_engine: EngineFactory
) -> None:
    seed(remote)
    ignore = IgnoreDifference(group="apps", kind="Deployment", json_pointers=("/spec/replicas",))
    engine, source = ssa_engine(ignore_differences=(ignore,)), make_source(remote.url)
    assert (await sync(engine, source)).ok
    await store.patch(deploy_ref(), {"spec": {"replicas": 5}}, "merge", field_manager="hpa")
    remote.write("apps/web.yaml", deployment(image="nginx:2"))
    remote.commit("new image")
    result = await sync(engine, source)
    assert actions(result)["Deployment/web"] is Action.CONFIGURED
    web = await store.get(deploy_ref())
    assert web["spec"]["replicas"] == 5
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert "f:replicas" not in entries(web)[("gitkrm", "Apply")]["fieldsV1"]["f:spec"]
    assert "f:replicas" in entries(web)[("hpa", "Update")]["fieldsV1"]["f:spec"]


# -- the pure parts ----------------------------------------------------------------------


def _live_cm(**md: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "apps", "resourceVersion": "7", **md},
        "data": {"a": "1", "b": "2"},
    }


def test_migration_turns_gitkrm_updates_and_the_annotation_into_its_apply_entry() -> None:
    typ = ssa_type_for(CM)
    update = managed_fields_entry("gitkrm", "Update", {"f:data": {"f:a": {}}})
    edit = managed_fields_entry("kubectl-edit", "Update", {"f:data": {"f:x": {}}})
    ann = {LA: '{"apiVersion":"v1","kind":"ConfigMap","data":{"b":"2"}}'}
    live_obj = _live_cm(annotations=ann, managedFields=[update, edit])
    mig = migration(live_obj, typ=typ, api_version="v1")
    assert mig is not None
    assert mig.patch[1:] == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "7"},
        {
            "op": "remove",
            "path": "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
        },
    ]
    written = mig.patch[0]["value"]
    assert [(e["manager"], e["operation"]) for e in written] == [
        ("gitkrm", "Apply"),
        ("kubectl-edit", "Update"),
    ]
    # What the annotation says gitkrm applied (the Update entry's fields when unreadable).
    assert written[0]["fieldsV1"] == {"f:data": {"f:b": {}}}
    assert written[0]["time"] == "2024-01-01T00:00:00Z"
    assert LA not in mig.live["metadata"]["annotations"]
    # Nothing of client-side apply left: nothing to migrate.
    assert migration(mig.live, typ=typ, api_version="v1") is None
    assert migration(_live_cm(), typ=typ, api_version="v1") is None
    unreadable = _live_cm(annotations={LA: "{"}, managedFields=[update])
    mig = migration(unreadable, typ=typ, api_version="v1")
    assert mig is not None
    assert mig.patch[0]["value"][0]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_predict_is_none_when_the_apply_changes_nothing() -> None:
    [d] = desired(configmap("c", data="{a: '1'}"))
    typ = ssa_type_for(CM)
    first = predict(d, _live_cm(), typ=typ, revision="r1")
    assert first is not None
    assert first.config is not None
    assert first.after["data"] == {"a": "1", "b": "2"}  # b: nobody applied it, it stays
    assert first.config["metadata"]["resourceVersion"] == "7"
    assert first.config["metadata"]["annotations"] == {"gitkrm.io/revision": "r1"}
    assert not first.force
    assert first.migrate is None
    again = predict(d, first.after, typ=typ, revision="r2")
    assert again is None  # the revision annotation alone does not make a change
    assert applied_by_gitkrm(first.after) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"annotations": {}, "labels": d.obj["metadata"]["labels"]},
        "data": {"a": "1"},
    }


# -- the cluster target: apply patches over HTTP -------------------------------------------


async def test_server_side_mode_over_http(kube: KubeStore) -> None:  # noqa: F811
    """The engine in server-side mode against gitkrm's API server through KubeStore (the
    cluster target): creates, drift forced back from another manager, removal, quiet."""
    ns = "ssa-over-http"
    files = {
        "ns.yaml": namespace(ns),
        "cm.yaml": configmap("c", ns=ns, data="{a: '1', b: '2'}"),
        "web.yaml": deployment(ns=ns),
    }
    engine = SyncEngine(
        store=kube, options=SyncOptions(source_name="http", agent_name="t", apply_mode=SSA)
    )
    ref = cm_ref("c", ns)
    try:
        first = await engine.sync(snapshot(files))
        assert first.counts["created"] == 3, first.problems()
        assert set(entries(await kube.get(ref))) == {("gitkrm", "Apply")}
        await kube.patch(ref, {"data": {"a": "x"}}, "merge", field_manager="kubectl-edit")
        again = SyncEngine(
            store=kube, options=SyncOptions(source_name="http", agent_name="t", apply_mode=SSA)
        )
        try:
            drift = await again.sync(snapshot(files))
        finally:
            await again.close()
        assert actions(drift) == {
            "Namespace/ssa-over-http": Action.UNCHANGED,
            "ConfigMap/c": Action.CONFIGURED,
            "Deployment/web": Action.UNCHANGED,
        }
        files["cm.yaml"] = configmap("c", ns=ns, data="{a: '1'}")
        removed = await engine.sync(snapshot(files, revision="rev-2"))
        assert removed.counts["configured"] == 1, removed.problems()
        assert (await kube.get(ref))["data"] == {"a": "1"}
        assert (await engine.sync(snapshot(files, revision="rev-2"))).counts["unchanged"] == 3
    finally:
        await engine.close()


def test_values_the_server_normalises_are_no_change() -> None:
    gvk = GVK(group="apps", version="v1", kind="Deployment")
    text = deployment().replace(
        "        image: nginx:1\n",
        "        image: nginx:1\n        resources: {limits: {cpu: 1000m}}\n",
    )
    [d] = desired(text)
    typ, meta = ssa_type_for(gvk), patch_meta_for(gvk)
    live_obj: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}}
    first = predict(d, live_obj, typ=typ, revision="r1", meta=meta)
    assert first is not None
    normalised = first.after
    containers = normalised["spec"]["template"]["spec"]["containers"]
    containers[0]["resources"]["limits"]["cpu"] = "1"  # as an API server stores it
    assert predict(d, normalised, typ=typ, revision="r1", meta=meta) is None
    assert predict(d, normalised, typ=typ, revision="r1") is not None
