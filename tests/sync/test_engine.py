"""The engine on real Git repositories and the SQLite store: the GitOps scenarios."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gitkrm.errors import NotFound
from gitkrm.krm import GVK, ObjectRef
from gitkrm.source import GitSource
from gitkrm.store import Store
from gitkrm.sync import live
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import AdoptionPolicy, IgnoreDifference
from gitkrm.sync.results import Action, SyncResult, SyncStatus
from tests.sync.conftest import EngineFactory, SourceFactory
from tests.sync.sync_helpers import Remote, configmap, deployment, namespace

LA = "kubectl.kubernetes.io/last-applied-configuration"
CM = GVK(group="", version="v1", kind="ConfigMap")


def cm_ref(name: str, ns: str = "apps") -> ObjectRef:
    return ObjectRef(group="", kind="ConfigMap", name=name, namespace=ns)


def deploy_ref(name: str = "web", ns: str = "apps") -> ObjectRef:
    return ObjectRef(group="apps", kind="Deployment", name=name, namespace=ns, version="v1")


async def get(store: Store, ref: ObjectRef) -> dict[str, Any] | None:
    try:
        return await store.get(ref)
    except NotFound:
        return None


async def sync(engine: SyncEngine, source: GitSource) -> SyncResult:
    return await engine.sync(await source.snapshot())


def actions(result: SyncResult) -> dict[str, Action]:
    return {f"{o.ref.kind}/{o.ref.name}": o.action for o in result.objects}


def pruned(result: SyncResult) -> list[str]:
    """The names of the objects the sync pruned, in the order it pruned them."""
    return [o.ref.name for o in result.objects if o.action is Action.PRUNED]


async def inventory_keys(store: Store, source: str = "src") -> set[str]:
    cm = await store.get(
        ObjectRef(
            group="", kind="ConfigMap", name=f"gitkrm-inventory-{source}", namespace="gitkrm-system"
        )
    )
    assert cm["metadata"]["labels"]["cli-utils.sigs.k8s.io/inventory-id"] == f"agent.{source}"
    return set(cm.get("data") or {})


def seed(remote: Remote) -> str:
    remote.write("ns.yaml", namespace("apps"))
    remote.write("apps/web.yaml", deployment())
    remote.write("apps/cm.yaml", configmap("settings", data="mode: prod"))
    return remote.commit("seed")


async def seeded_engine(
    remote: Remote,
    source: GitSource,
    make_engine: EngineFactory,
    *,
    seed: Callable[[Remote], str] = seed,
    **options: Any,
) -> SyncEngine:
    """An engine of `options` that has synced the revision `seed` commits (which must succeed)."""
    seed(remote)
    engine = make_engine(**options)
    result = await sync(engine, source)
    assert result.ok, result.problems()
    return engine


async def test_first_sync_then_nothing_to_do(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    sha = seed(remote)
    engine = make_engine()
    result = await sync(engine, source)
    assert result.status is SyncStatus.SUCCEEDED, result.problems()
    assert result.revision == sha
    assert actions(result) == {
        "Namespace/apps": Action.CREATED,
        "ConfigMap/settings": Action.CREATED,
        "Deployment/web": Action.CREATED,
    }
    assert result.counts["created"] == 3
    assert set(result.timings_ms) == {"git", "render", "diff", "apply"}
    web = await store.get(deploy_ref())
    assert "app.kubernetes.io/managed-by" not in web["metadata"]["labels"]
    assert web["metadata"]["labels"]["gitkrm.io/source"] == "src"
    assert web["metadata"]["annotations"]["gitkrm.io/revision"] == sha
    assert "gitkrm.io/revision" not in web["metadata"]["annotations"][LA]
    assert await inventory_keys(store) == {
        "_apps__Namespace",
        "apps_settings__ConfigMap",
        "apps_web_apps_Deployment",
    }
    rv = await live.current_revision(store)
    again = await sync(engine, source)
    assert again.ok
    assert set(actions(again).values()) == {Action.UNCHANGED}
    assert await live.current_revision(store) == rv  # not one write
    quiet = await engine.check_drift()
    assert quiet.ok
    assert quiet.counts["unchanged"] == 3
    assert await live.current_revision(store) == rv


async def test_change_and_remove_fields_and_revision_only_on_changed_objects(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    remote.write("ns.yaml", namespace("apps"))
    remote.write("apps/web.yaml", deployment(extra_spec="  minReadySeconds: 5\n"))
    remote.write("apps/cm.yaml", configmap("settings"))
    sha1 = remote.commit()
    engine = make_engine()
    assert (await sync(engine, source)).ok
    remote.write("apps/web.yaml", deployment(image="nginx:2"))
    sha2 = remote.commit("new image, no minReadySeconds")
    result = await sync(engine, source)
    assert result.ok
    assert actions(result)["Deployment/web"] is Action.CONFIGURED
    assert actions(result)["ConfigMap/settings"] is Action.UNCHANGED
    web = await store.get(deploy_ref())
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert "minReadySeconds" not in web["spec"]
    assert web["metadata"]["annotations"]["gitkrm.io/revision"] == sha2
    cm = await store.get(cm_ref("settings"))
    assert cm["metadata"]["annotations"]["gitkrm.io/revision"] == sha1


async def test_live_edits_git_fields_set_back_other_fields_kept(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    engine = await seeded_engine(remote, source, make_engine)
    await store.patch(
        deploy_ref(),
        {"spec": {"replicas": 9}, "metadata": {"labels": {"owner": "ops"}}},
        "strategic",
    )
    await store.patch(cm_ref("settings"), {"data": {"mode": "debug", "extra": "x"}}, "merge")
    drift = await engine.check_drift()
    assert drift.ok, drift.problems()
    assert actions(drift) == {
        "Namespace/apps": Action.UNCHANGED,
        "ConfigMap/settings": Action.CONFIGURED,
        "Deployment/web": Action.CONFIGURED,
    }
    web = await store.get(deploy_ref())
    assert web["spec"]["replicas"] == 2
    assert web["metadata"]["labels"]["owner"] == "ops"
    cm = await store.get(cm_ref("settings"))
    assert cm["data"] == {"mode": "prod", "extra": "x"}
    # A deleted object comes back.
    await store.delete(cm_ref("settings"))
    again = await engine.check_drift()
    assert actions(again)["ConfigMap/settings"] is Action.CREATED
    assert await get(store, cm_ref("settings")) is not None


async def test_an_ignored_difference_is_kept(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    ignore = IgnoreDifference(group="apps", kind="Deployment", json_pointers=("/spec/replicas",))
    engine = await seeded_engine(remote, source, make_engine, ignore_differences=(ignore,))
    await store.patch(deploy_ref(), {"spec": {"replicas": 5}}, "strategic")
    drift = await engine.check_drift()
    assert set(actions(drift).values()) == {Action.UNCHANGED}
    assert (await store.get(deploy_ref()))["spec"]["replicas"] == 5


async def test_delete_a_file_prunes_it_unless_prune_is_disabled(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    seed(remote)
    remote.write(
        "apps/keep.yaml", configmap("keep", extra="  annotations:\n    gitkrm.io/prune: disabled\n")
    )
    remote.commit()
    engine = make_engine()
    assert (await sync(engine, source)).ok
    remote.remove("apps/cm.yaml")
    remote.remove("apps/keep.yaml")
    remote.commit("delete two files")
    result = await sync(engine, source)
    assert result.ok, result.problems()
    assert actions(result)["ConfigMap/settings"] is Action.PRUNED
    assert actions(result)["ConfigMap/keep"] is Action.SKIPPED
    assert await get(store, cm_ref("settings")) is None
    assert await get(store, cm_ref("keep")) is not None
    assert await inventory_keys(store) == {"_apps__Namespace", "apps_web_apps_Deployment"}


async def test_git_revert_brings_the_previous_state_back(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    seed(remote)
    remote.write("apps/old.yaml", configmap("old"))
    remote.commit("with old")
    engine = make_engine()
    assert (await sync(engine, source)).ok
    remote.remove("apps/old.yaml")
    remote.write("apps/new.yaml", configmap("new"))
    remote.write("apps/cm.yaml", configmap("settings", data="mode: changed"))
    remote.commit("bad change")
    assert (await sync(engine, source)).ok
    assert await get(store, cm_ref("old")) is None
    reverted = remote.revert_head()
    result = await sync(engine, source)
    assert result.ok
    assert result.revision == reverted
    assert actions(result)["ConfigMap/old"] is Action.CREATED
    assert actions(result)["ConfigMap/new"] is Action.PRUNED
    assert actions(result)["ConfigMap/settings"] is Action.CONFIGURED
    assert (await store.get(cm_ref("settings")))["data"] == {"mode": "prod"}
    assert await get(store, cm_ref("new")) is None


async def test_an_unowned_object_of_the_same_name_is_refused_and_untouched(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    seed(remote)
    await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    theirs = await store.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "apps"},
            "data": {"mine": "no"},
        }
    )
    engine = make_engine()
    result = await sync(engine, source)
    assert result.status is SyncStatus.FAILED
    assert actions(result)["ConfigMap/settings"] is Action.REFUSED
    assert actions(result)["Deployment/web"] is Action.CREATED
    assert actions(result)["Namespace/apps"] is Action.REFUSED
    refused = [o for o in result.objects if o.action is Action.REFUSED]
    assert all("conflict" in o.message for o in refused)
    assert (await store.get(cm_ref("settings")))["metadata"]["resourceVersion"] == theirs[
        "metadata"
    ]["resourceVersion"]
    assert await inventory_keys(store) == {"apps_web_apps_Deployment"}
    assert any("apps/cm.yaml:1" in p and "refused" in p for p in result.problems())


async def test_adoption_policies(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    remote.write("ns.yaml", namespace("apps"))
    remote.write("apps/plain.yaml", configmap("plain"))
    remote.write("apps/helm.yaml", configmap("helm"))
    remote.commit()
    await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    for name, labels in (("plain", {}), ("helm", {"app.kubernetes.io/managed-by": "Helm"})):
        await store.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "apps", "labels": labels},
            }
        )
    result = await sync(make_engine(adoption=AdoptionPolicy.IF_UNOWNED), source)
    assert actions(result) == {
        "Namespace/apps": Action.CONFIGURED,
        "ConfigMap/helm": Action.REFUSED,
        "ConfigMap/plain": Action.CONFIGURED,
    }
    assert (await store.get(cm_ref("plain")))["metadata"]["labels"]["gitkrm.io/source"] == "src"
    result = await sync(make_engine(adoption=AdoptionPolicy.ALWAYS), source)
    assert result.ok, result.problems()
    helm = await store.get(cm_ref("helm"))
    # Adopted: owned through gitkrm's own label; the other tool's label is not rewritten.
    assert helm["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "Helm",
        "gitkrm.io/source": "src",
    }
    assert await inventory_keys(store) == {
        "_apps__Namespace",
        "apps_plain__ConfigMap",
        "apps_helm__ConfigMap",
    }


async def test_two_sources_never_touch_each_others_objects(
    store: Store, tmp_path: Any, make_source: SourceFactory, make_engine: EngineFactory
) -> None:
    a, b = Remote(tmp_path / "a"), Remote(tmp_path / "b")
    a.write("ns.yaml", namespace("apps"))
    a.write("cm.yaml", configmap("shared") + "---\n" + configmap("only-a"))
    a.commit()
    b.write("cm.yaml", configmap("shared") + "---\n" + configmap("only-b"))
    b.commit()
    engine_a = make_engine(source_name="a")
    engine_b = make_engine(source_name="b")
    source_a, source_b = (
        make_source(a.url, name="a", cache="ca"),
        make_source(b.url, name="b", cache="cb"),
    )
    assert (await sync(engine_a, source_a)).ok
    result_b = await sync(engine_b, source_b)
    assert actions(result_b) == {
        "ConfigMap/shared": Action.REFUSED,
        "ConfigMap/only-b": Action.CREATED,
    }
    shared = next(o for o in result_b.objects if o.ref.name == "shared")
    assert shared.message == 'conflict: owned by gitkrm source "a"'
    b.remove("cm.yaml")
    b.write("other.yaml", configmap("other-b"))
    b.commit()
    result_b = await sync(engine_b, source_b)
    assert actions(result_b) == {
        "ConfigMap/other-b": Action.CREATED,
        "ConfigMap/only-b": Action.PRUNED,
    }
    assert (await store.get(cm_ref("shared")))["metadata"]["labels"]["gitkrm.io/source"] == "a"
    a.remove("cm.yaml")
    a.commit()
    result_a = await sync(engine_a, source_a)
    assert actions(result_a)["ConfigMap/shared"] is Action.PRUNED
    assert await get(store, cm_ref("other-b")) is not None
    assert await inventory_keys(store, "b") == {"apps_other-b__ConfigMap"}


async def test_an_empty_revision_is_refused_unless_allowed(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    await seeded_engine(remote, source, make_engine)
    for path in ("ns.yaml", "apps/web.yaml", "apps/cm.yaml"):
        remote.remove(path)
    remote.commit("oops")
    refused = await sync(make_engine(), source)
    assert refused.status is SyncStatus.FAILED
    assert refused.objects == ()
    assert "renders no objects while the inventory holds 3" in refused.errors[0]
    assert await get(store, cm_ref("settings")) is not None
    allowed = await sync(make_engine(allow_empty=True), source)
    assert allowed.ok
    assert allowed.counts["pruned"] == 3
    assert await get(store, cm_ref("settings")) is None


async def test_reconcile_disabled_objects_are_left_alone(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    engine = await seeded_engine(remote, source, make_engine)
    await store.patch(
        cm_ref("settings"),
        {
            "metadata": {"annotations": {"gitkrm.io/reconcile": "disabled"}},
            "data": {"mode": "hand"},
        },
        "merge",
    )
    remote.write("apps/cm.yaml", configmap("settings", data="mode: git"))
    remote.commit()
    result = await sync(engine, source)
    assert actions(result)["ConfigMap/settings"] is Action.SKIPPED
    assert result.ok
    assert (await store.get(cm_ref("settings")))["data"] == {"mode": "hand"}


async def test_plan_is_a_dry_run_and_diff_text_shows_it(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    seed(remote)
    remote.write(
        "apps/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: apps}\n"
        "stringData: {password: hunter2}\n",
    )
    remote.commit()
    engine = make_engine()
    plan = await engine.plan(await source.snapshot())
    assert not plan.in_sync
    assert await get(store, cm_ref("settings")) is None
    text = engine.diff_text(plan)
    assert "diff -u -N live/v1.ConfigMap.apps.settings merged/v1.ConfigMap.apps.settings\n" in text
    assert "+++ merged/apps.v1.Deployment.apps.web\n" in text
    assert "hunter2" not in text
    assert "aHVudGVyMg" not in text
    assert "password: '***'" in text
    assert (await sync(engine, source)).ok
    assert (await engine.plan(await source.snapshot())).in_sync
    assert engine.diff_text(await engine.plan(await source.snapshot())) == ""
    await store.patch(cm_ref("settings"), {"data": {"mode": "debug"}}, "merge")
    drifted = await engine.plan(await source.snapshot())
    text = engine.diff_text(drifted)
    assert "-  mode: debug\n+  mode: prod\n" in text
