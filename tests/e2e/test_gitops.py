"""GitOps scenarios with real bare repositories and the real `gitkrm` CLI (`run --once`).

Live edits are made through the store itself between two runs (the store has one writer: the
agent, or the test while no agent runs); the long-lived agent's own drift checks are in
test_agent_lifecycle.py. The scenarios that write objects run in both apply modes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.krm import Obj, ObjectRef
from tests.e2e.e2e_support import (
    CM,
    DEPLOY,
    cm_ref,
    get_or_none,
    gitkrm,
    gitsource_status,
    names,
    read_status,
    reading,
    writing,
)
from tests.e2e.manifests import configmap, deployment, gitsource, namespace
from tests.source.source_gitrepo import RemoteRepo, git

INVENTORY_NS = "gitkrm-system"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@pytest.fixture(params=["client-side", "server-side"])
def apply_mode(request: pytest.FixtureRequest) -> str:
    mode: str = request.param
    return mode


def run_once(*args: str, cwd: Path) -> tuple[int, str, str]:
    res = gitkrm("run", "--once", *args, cwd=cwd)
    return res.returncode, res.stdout, res.stderr


def agent_flags(*source: str, state: Path, apply_mode: str) -> tuple[str, ...]:
    """The flags of every run in these scenarios: the source, the state and the apply mode."""
    return (*source, "--state", str(state), "--agent-name", "e2e", "--apply-mode", apply_mode)


def web_ref() -> ObjectRef:
    return ObjectRef(group="apps", kind="Deployment", name="web", namespace="shop")


async def settings_and_web(state: Path) -> tuple[Obj, Obj]:
    """The ConfigMap shop/settings and the Deployment shop/web as the store has them."""
    async with reading(state) as store:
        return await store.get(cm_ref("settings", "shop")), await store.get(web_ref())


async def inventory_keys(state: Path, source: str = "default") -> set[str]:
    async with reading(state) as store:
        listed = await store.list(
            CM,
            INVENTORY_NS,
            label_selector=f"cli-utils.sigs.k8s.io/inventory-id=e2e.{source}",
        )
    keys: set[str] = set()
    for item in listed["items"]:
        keys.update((item.get("data") or {}).keys())
    return keys


async def test_first_sync_then_change_remove_and_live_edits(
    repo: RemoteRepo, state: Path, tmp_path: Path, apply_mode: str
) -> None:
    repo.write("ns.yaml", namespace("shop"))
    repo.write(
        "settings.yaml", configmap("settings", {"color": "blue", "size": "L"}, namespace="shop")
    )
    repo.write("web.yaml", deployment("web", namespace="shop", image="nginx:1.25"))
    first = repo.commit("first")
    repo.push()
    flags = agent_flags("--repo", repo.url, state=state, apply_mode=apply_mode)

    # First sync: everything created, labelled, annotated; the GitSource says so.
    code, out, err = run_once(*flags, cwd=tmp_path)
    assert code == 0, err
    assert f"default: synced revision {first[:12]}: 3 created" in out
    settings, web = await settings_and_web(state)
    status = await read_status(state)
    assert settings["data"] == {"color": "blue", "size": "L"}
    labels = settings["metadata"]["labels"]
    assert "app.kubernetes.io/managed-by" not in labels
    assert labels["gitkrm.io/source"] == "default"
    annotations = settings["metadata"]["annotations"]
    assert annotations["gitkrm.io/revision"] == first
    if apply_mode == "client-side":
        assert LAST_APPLIED in annotations
    else:
        assert LAST_APPLIED not in annotations
        managers = {(e["manager"], e["operation"]) for e in settings["metadata"]["managedFields"]}
        assert managers == {("gitkrm", "Apply")}
    assert status["lastSyncedRevision"] == first
    assert status["result"] == "Succeeded"
    assert status["counts"]["created"] == 3
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    assert await inventory_keys(state) == {
        "_shop__Namespace",
        "shop_settings__ConfigMap",
        "shop_web_apps_Deployment",
    }

    # Change a field, remove a field: only the ConfigMap is written.
    repo.write("settings.yaml", configmap("settings", {"color": "green"}, namespace="shop"))
    second = repo.commit("green, no size")
    repo.push()
    code, out, err = run_once(*flags, cwd=tmp_path)
    assert code == 0, err
    assert "1 configured" in out
    settings, web2 = await settings_and_web(state)
    assert settings["data"] == {"color": "green"}  # size is gone from the live object
    assert settings["metadata"]["annotations"]["gitkrm.io/revision"] == second
    # A commit that does not change an object does not rewrite it.
    assert web2["metadata"]["resourceVersion"] == web["metadata"]["resourceVersion"]
    assert web2["metadata"]["annotations"]["gitkrm.io/revision"] == first

    # Live edits: Git-owned fields are set back, fields Git never set are kept.
    async with writing(state) as store:
        settings["data"] = {"color": "red", "extra": "kept"}
        settings["metadata"]["labels"]["team"] = "ops"
        await store.update(settings)
        await store.patch(web_ref(), {"spec": {"replicas": 5}}, "merge")
    assert gitkrm("diff", *flags, cwd=tmp_path).returncode == 1
    code, out, err = run_once(*flags, cwd=tmp_path)
    assert code == 0, err
    assert "2 configured" in out
    settings, web = await settings_and_web(state)
    assert settings["data"] == {"color": "green", "extra": "kept"}
    assert settings["metadata"]["labels"]["team"] == "ops"
    assert web["spec"]["replicas"] == 2
    res = gitkrm("diff", *flags, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr

    # An ignored difference is kept (and not reported); other drift is still set back.
    config = tmp_path / "sources.yaml"
    config.write_text(
        gitsource(
            "default",
            repo.url,
            ignoreDifferences=[
                {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}
            ],
        )
    )
    cflags = agent_flags("--config", str(config), state=state, apply_mode=apply_mode)
    async with writing(state) as store:
        await store.patch(web_ref(), {"spec": {"replicas": 7}}, "merge")
    res = gitkrm("diff", *cflags, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    async with writing(state) as store:
        patch = {
            "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "evil:1"}]}}}
        }
        await store.patch(web_ref(), patch, "strategic")
    code, out, err = run_once(*cflags, cwd=tmp_path)
    assert code == 0, err
    async with reading(state) as store:
        web = await store.get(web_ref())
    assert web["spec"]["replicas"] == 7
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"


async def run_once_to(flags: tuple[str, ...], cwd: Path, state: Path, configmaps: set[str]) -> None:
    """`run --once` creates one ConfigMap and prunes one (the other two unchanged): the
    source's ConfigMaps are then `configmaps`."""
    code, out, err = run_once(*flags, cwd=cwd)
    assert code == 0, err
    assert "1 created, 0 configured, 1 pruned, 2 unchanged" in out
    async with reading(state) as store:
        assert await names(store, CM, source="default") == configmaps


async def test_delete_a_file_then_revert(
    repo: RemoteRepo, state: Path, tmp_path: Path, apply_mode: str
) -> None:
    for n in ("a", "b", "c"):
        repo.write(f"{n}.yaml", configmap(n, {"v": n}))
    repo.commit("abc")
    repo.push()
    flags = agent_flags("--repo", repo.url, state=state, apply_mode=apply_mode)
    code, _, err = run_once(*flags, cwd=tmp_path)
    assert code == 0, err
    async with reading(state) as store:
        a_before = await store.get(cm_ref("a"))

    # Delete b, add d: b is pruned, d created.
    repo.remove("b.yaml")
    repo.write("d.yaml", configmap("d", {"v": "d"}))
    repo.commit("drop b, add d")
    repo.push()
    await run_once_to(flags, tmp_path, state, {"default/a", "default/c", "default/d"})
    assert await inventory_keys(state) == {
        "default_a__ConfigMap",
        "default_c__ConfigMap",
        "default_d__ConfigMap",
    }

    # git revert: the previous state comes back (b re-created, d pruned), a is not rewritten.
    git("revert", "--no-edit", "HEAD", cwd=repo.work)
    reverted = repo.head()
    repo.push()
    await run_once_to(flags, tmp_path, state, {"default/a", "default/b", "default/c"})
    async with reading(state) as store:
        b = await store.get(cm_ref("b"))
        a_after = await store.get(cm_ref("a"))
        status = await gitsource_status(store)
    assert b["data"] == {"v": "b"}
    assert b["metadata"]["annotations"]["gitkrm.io/revision"] == reverted
    assert a_after["metadata"]["resourceVersion"] == a_before["metadata"]["resourceVersion"]
    assert status["lastSyncedRevision"] == reverted


async def test_an_object_gitkrm_does_not_own_is_refused_and_untouched(
    repo: RemoteRepo, state: Path, tmp_path: Path, apply_mode: str
) -> None:
    async with writing(state) as store:  # someone else's ConfigMap, before gitkrm ever ran
        await store.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "taken", "namespace": "default"},
                "data": {"owner": "someone"},
            }
        )
    repo.write(
        "apps.yaml", configmap("free", {"a": "1"}) + "---\n" + configmap("taken", {"a": "2"})
    )
    repo.commit("taken")
    repo.push()
    flags = ("--repo", repo.url, "--state", str(state), "--apply-mode", apply_mode)
    code, out, err = run_once(*flags, cwd=tmp_path)
    assert code == 1, out + err
    assert "apps.yaml:8" in err
    assert "taken" in err
    assert "1 created" in out
    assert "1 refused" in out
    async with reading(state) as store:
        taken = await store.get(cm_ref("taken"))
        free = await get_or_none(store, cm_ref("free"))
        status = await gitsource_status(store)
    assert taken["data"] == {"owner": "someone"}
    assert "labels" not in taken["metadata"]
    assert "annotations" not in taken["metadata"]
    assert free is not None
    assert status["result"] == "Failed"
    assert status["counts"]["refused"] == 1
    assert "taken" in status["lastError"]


async def test_two_sources_on_one_store_never_touch_each_other(state: Path, tmp_path: Path) -> None:
    team_a, team_b = RemoteRepo(tmp_path / "a"), RemoteRepo(tmp_path / "b")
    team_a.write("a.yaml", configmap("a1", {"t": "a"}) + "---\n" + configmap("common", {"t": "a"}))
    team_a.commit("a")
    team_a.push()
    team_b.write("b.yaml", configmap("b1", {"t": "b"}) + "---\n" + configmap("common", {"t": "b"}))
    team_b.commit("b")
    team_b.push()
    config = tmp_path / "sources.yaml"
    config.write_text(gitsource("team-a", team_a.url) + "---\n" + gitsource("team-b", team_b.url))
    flags = ("--config", str(config), "--state", str(state), "--agent-name", "e2e")

    code, out, err = run_once(*flags, cwd=tmp_path)
    assert code == 1, out + err  # team-b may not take team-a's "common"
    assert "team-a: synced" in out
    assert "team-b: FAILED" in out
    async with reading(state) as store:
        assert await names(store, CM, source="team-a") == {"default/a1", "default/common"}
        assert await names(store, CM, source="team-b") == {"default/b1"}
        common = await store.get(cm_ref("common"))
    assert common["data"] == {"t": "a"}

    # team-a drops everything it had but one object: team-b's objects are not pruned.
    team_a.write("a.yaml", configmap("a2", {"t": "a"}))
    team_a.commit("only a2")
    team_a.push()
    code, out, err = run_once(*flags, cwd=tmp_path)
    async with reading(state) as store:
        assert await names(store, CM, source="team-a") == {"default/a2"}
        assert await names(store, CM, source="team-b") == {"default/b1", "default/common"}
    assert code == 0, out + err  # "common" was freed by team-a's prune, team-b took it


async def test_a_suspended_source_does_nothing(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    repo.write("a.yaml", configmap("a", {"v": "1"}))
    repo.commit("a")
    repo.push()
    config = tmp_path / "sources.yaml"
    config.write_text(gitsource("paused", repo.url, suspend=True))
    code, out, err = run_once("--config", str(config), "--state", str(state), cwd=tmp_path)
    assert code == 0, err
    assert "paused: suspended, not synced" in out
    async with reading(state) as store:
        assert await get_or_none(store, cm_ref("a")) is None
        assert await names(store, DEPLOY) == set()
        src = await store.get(
            ObjectRef(group="gitkrm.io", kind="GitSource", name="paused", namespace=INVENTORY_NS)
        )
    assert src["spec"]["suspend"] is True
    assert "status" not in src or not src["status"].get("lastSyncedRevision")
