"""Source trees of GitSource objects through the real CLI (`run --once`), on real bare
repositories and the real SQLite store: a root that declares children (and a
grandchild), `dependsOn` order, an edit in a leaf, a leaf removed from Git (its objects
pruned, its GitSource not left Terminating), a child on a second repository, a cycle
reported on the object, and `gitkrm status` / `gitkrm history` showing the children."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gitkrm.agent.tree.naming import child_name
from gitkrm.krm import Obj, ObjectRef
from tests.e2e.e2e_support import (
    CM,
    GITSOURCE,
    cm_ref,
    get_or_none,
    gitkrm,
    names,
    read_object,
    reading,
)
from tests.e2e.manifests import configmap, gitsource, namespace
from tests.source.source_gitrepo import RemoteRepo

NS = "tree"


def declared(name: str) -> ObjectRef:
    return ObjectRef(group="gitkrm.io", kind="GitSource", name=name, namespace=NS)


def child(name: str) -> str:
    return child_name(declared(name))


def in_ns(text: str) -> str:
    return text.replace("metadata:\n", f"metadata:\n  namespace: {NS}\n", 1)


def layout(repo: RemoteRepo, *, other: RemoteRepo | None = None) -> None:
    """root/ declares infra and apps (apps depends on infra and waits for its health);
    apps/ declares the grandchild leaf; other/ a second repository."""
    repo.write("root/ns.yaml", namespace(NS))
    repo.write("root/infra.yaml", in_ns(gitsource("infra", ".", path="infra", interval="1h")))
    repo.write(
        "root/apps.yaml",
        in_ns(
            gitsource(
                "apps", ".", path="apps", interval="1h", wait=True, dependsOn=[{"name": "infra"}]
            )
        ),
    )
    repo.write("infra/cm.yaml", configmap("infra-cm", {"a": "1"}))
    repo.write("apps/cm.yaml", configmap("apps-cm", {"b": "1"}))
    repo.write("apps/leaf.yaml", in_ns(gitsource("leaf", ".", path="leaf", interval="1h")))
    repo.write("leaf/cm.yaml", configmap("leaf-cm", {"c": "1"}))
    if other is not None:
        repo.write(
            "root/other.yaml",
            in_ns(gitsource("other", other.url, ref={"branch": "release"}, interval="1h")),
        )


def run_once(repo: RemoteRepo, state: Path, *extra: str) -> Any:
    return gitkrm(
        "run", "--once", "--repo", repo.url, "--path", "root", "--state", str(state),
        "--agent-name", "e2e", *extra, cwd=state.parent,
    )  # fmt: skip


async def declared_status(state: Path, name: str) -> dict[str, Any]:
    obj = await read_object(state, declared(name))
    assert obj is not None, name
    return obj


@pytest.fixture
def other(tmp_path: Path) -> RemoteRepo:
    second = RemoteRepo(tmp_path / "other", branch="release")
    second.write("cm.yaml", configmap("other-cm", {"d": "1"}))
    second.commit("other")
    second.push()
    return second


async def test_a_tree_syncs_in_order_edits_and_removes_a_leaf(
    repo: RemoteRepo, state: Path, other: RemoteRepo
) -> None:
    layout(repo, other=other)
    repo.commit("tree")
    repo.push()
    res = run_once(repo, state, "--wait", "--timeout", "1m")
    assert res.returncode == 0, res.stdout + res.stderr
    async with reading(state) as store:
        assert await names(store, CM) >= {
            f"default/{n}" for n in ("infra-cm", "apps-cm", "leaf-cm", "other-cm")
        }
        children = await store.list(GITSOURCE, "gitkrm-system")
        parents = {
            o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get("gitkrm.io/parent")
            for o in children["items"]
        }
    assert parents == {
        "default": None,
        child("infra"): "default",
        child("apps"): "default",
        child("other"): "default",
        child("leaf"): child("apps"),
    }
    # dependsOn: infra synced before apps; the summary shows the tree indented
    order = re.findall(r"sync source=(\S+)", res.stderr)
    assert order.index(child("infra")) < order.index(child("apps")) < order.index(child("leaf"))
    assert f"\n  {child('leaf')}" not in res.stdout
    assert f"\n    {child('leaf')}: synced" in res.stdout
    # the declaring objects carry the child's state and the finalizer
    apps = await declared_status(state, "apps")
    ready = {c["type"]: c for c in apps["status"]["conditions"]}["Ready"]
    assert ready["status"] == "True", apps["status"]
    assert apps["status"]["child"] == child("apps")
    assert apps["metadata"]["finalizers"] == ["gitkrm.io/prune"]
    leaf_before = await declared_status(state, "leaf")
    rv = leaf_before["metadata"]["resourceVersion"]

    # a quiet re-sync rewrites no status
    again = run_once(repo, state)
    assert again.returncode == 0, again.stdout + again.stderr
    after = await declared_status(state, "leaf")
    assert after["metadata"]["resourceVersion"] == rv, (leaf_before["status"], after["status"])

    # an edit in the leaf
    repo.write("leaf/cm.yaml", configmap("leaf-cm", {"c": "2"}))
    repo.commit("leaf edit")
    repo.push()
    res = run_once(repo, state)
    assert res.returncode == 0, res.stdout + res.stderr
    leaf_cm = await read_object(state, cm_ref("leaf-cm"))
    assert leaf_cm is not None
    assert leaf_cm["data"] == {"c": "2"}

    # the leaf removed from Git: its GitSource pruned (no hang), its objects pruned
    repo.remove("apps/leaf.yaml")
    repo.commit("no leaf")
    repo.push()
    res = run_once(repo, state)
    assert res.returncode == 0, res.stdout + res.stderr
    async with reading(state) as store:
        assert await get_or_none(store, declared("leaf")) is None
        assert await get_or_none(store, cm_ref("leaf-cm")) is None
        assert await get_or_none(store, cm_ref("apps-cm")) is not None
        gone = await store.list(GITSOURCE, "gitkrm-system")
        assert child("leaf") not in {o["metadata"]["name"] for o in gone["items"]}

    # status shows each child source with its parent; history names them
    shown = gitkrm("status", "--state", str(state), cwd=state.parent)
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line.split()[1] for line in shown.stdout.splitlines()[1:] if line}
    assert rows[child("apps")] == "default"
    history = gitkrm("history", "--state", str(state), cwd=state.parent)
    assert history.returncode == 0, history.stderr
    parents = {}  # SOURCE -> PARENT, from the rows of every commit
    for line in history.stdout.splitlines()[1:]:
        cells = line.split()
        if "e2e" in cells and cells[0] != "!":
            at = cells.index("e2e")
            parents[cells[at + 1]] = cells[at + 2]
    assert parents[child("infra")] == "default"
    assert parents[child("leaf")] == child("apps")
    assert parents["default"] == "-"


async def test_a_cycle_is_reported_on_the_object(repo: RemoteRepo, state: Path) -> None:
    layout(repo)
    repo.write("leaf/back.yaml", in_ns(gitsource("back", ".", path="root", interval="1h")))
    repo.commit("cycle")
    repo.push()
    res = run_once(repo, state)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "a cycle of sources" in res.stdout
    back = await declared_status(state, "back")
    assert "a cycle of sources" in back["status"]["lastError"]
    # the rest of the tree synced
    assert await read_object(state, cm_ref("leaf-cm")) is not None


async def test_a_declared_gitsource_in_gitkrm_system_is_refused(
    repo: RemoteRepo, state: Path
) -> None:
    repo.write("root/bad.yaml", gitsource("bad", ".", path="infra").replace(
        "metadata:\n", "metadata:\n  namespace: gitkrm-system\n", 1))  # fmt: skip
    repo.write("infra/cm.yaml", configmap("infra-cm", {"a": "1"}))
    repo.commit("bad")
    repo.push()
    res = run_once(repo, state)
    assert res.returncode == 1
    assert "may not live in gitkrm-system" in res.stdout


async def test_interpret_registers_the_peers_crds_until_git_carries_them(
    repo: RemoteRepo, state: Path
) -> None:
    import yaml

    from gitkrm.agent.tree.flux_crds import kustomization_crd

    crd_ref = ObjectRef(
        group="apiextensions.k8s.io",
        kind="CustomResourceDefinition",
        name="kustomizations.kustomize.toolkit.fluxcd.io",
    )

    async def crd_after(message: str) -> Obj:
        """Commit and push, sync interpreting Flux: the Kustomization CRD in the store."""
        repo.commit(message)
        repo.push()
        res = run_once(repo, state, "--interpret", "flux")
        assert res.returncode == 0, res.stdout + res.stderr
        crd = await read_object(state, crd_ref)
        assert crd is not None
        return crd

    repo.write("root/cm.yaml", configmap("plain", {"a": "1"}))
    registered = await crd_after("plain")
    assert registered["metadata"]["annotations"]["gitkrm.io/stand-in"] == "true"
    # a repository that carries the CRD (a bootstrapped Flux repository) takes it over
    repo.write("root/crd.yaml", yaml.safe_dump(kustomization_crd()))
    taken = await crd_after("the CRD in Git")
    assert taken["metadata"]["labels"]["gitkrm.io/source"] == "default"


def test_a_peer_missing_from_the_build_is_a_usage_error(repo: RemoteRepo, state: Path) -> None:
    res = run_once(repo, state, "--interpret", "flux,nothing")
    assert res.returncode == 2
    assert "'nothing': not a peer gitkrm interprets" in res.stderr


def hook(name: str, phase: str) -> str:
    text = configmap(name, {"ran": "yes"})
    return text.replace(
        "metadata:\n", f"metadata:\n  annotations: {{argocd.argoproj.io/hook: {phase}}}\n", 1
    )


async def test_a_removed_childs_delete_hooks_run_around_its_prune(
    repo: RemoteRepo, state: Path
) -> None:
    repo.write("root/ns.yaml", namespace(NS))
    repo.write("root/leaf.yaml", in_ns(gitsource("leaf", ".", path="leaf", interval="1h")))
    repo.write("leaf/cm.yaml", configmap("leaf-cm", {"c": "1"}))
    repo.write("leaf/pre.yaml", hook("pre-delete-ran", "PreDelete"))
    repo.write("leaf/post.yaml", hook("post-delete-ran", "PostDelete"))
    repo.commit("leaf with delete hooks")
    repo.push()
    res = run_once(repo, state)
    assert res.returncode == 0, res.stdout + res.stderr
    assert await read_object(state, cm_ref("leaf-cm")) is not None
    assert await read_object(state, cm_ref("pre-delete-ran")) is None  # never in a sync
    # the leaf and its path removed in one commit: the hooks of its last revision run
    repo.remove("root/leaf.yaml")
    for f in ("cm.yaml", "pre.yaml", "post.yaml"):
        repo.remove(f"leaf/{f}")
    repo.commit("no leaf")
    repo.push()
    res = run_once(repo, state)
    assert res.returncode == 0, res.stdout + res.stderr
    assert await read_object(state, cm_ref("leaf-cm")) is None
    assert await read_object(state, cm_ref("pre-delete-ran")) is not None
    assert await read_object(state, cm_ref("post-delete-ran")) is not None
    assert await read_object(state, declared("leaf")) is None
    log = res.stderr
    pruned = log.index("object(s) pruned")
    assert log.index("PreDelete hook") < pruned < log.index("PostDelete hook")


def test_diff_knows_the_peers_crds_it_cannot_register(repo: RemoteRepo, state: Path) -> None:
    repo.write(
        "root/ks.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
        "metadata: {name: apps, namespace: flux-system}\n"
        "spec: {interval: 10m, path: ./apps, prune: true, "
        "sourceRef: {kind: GitRepository, name: flux-system}}\n",
    )
    repo.write("root/ns.yaml", namespace("flux-system"))
    repo.commit("flux")
    repo.push()
    flags = ("--repo", repo.url, "--path", "root", "--state", str(state))
    plain = gitkrm("diff", *flags, cwd=state.parent)
    assert plain.returncode == 2, plain.stdout + plain.stderr  # a kind nobody defines
    res = gitkrm("diff", *flags, "--interpret", "flux", cwd=state.parent)
    assert res.returncode == 1, res.stdout + res.stderr  # differences: nothing synced yet
    assert "kind: Kustomization" in res.stdout


async def test_children_waiting_on_each_other_stay_pending(repo: RemoteRepo, state: Path) -> None:
    repo.write("root/ns.yaml", namespace(NS))
    for name, other in (("a", "b"), ("b", "a")):
        repo.write(
            f"root/{name}.yaml",
            in_ns(gitsource(name, ".", path=name, interval="1h", dependsOn=[{"name": other}])),
        )
        repo.write(f"{name}/cm.yaml", configmap(f"{name}-cm", {"v": "1"}))
    repo.commit("a dependsOn cycle")
    repo.push()
    res = run_once(repo, state)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"{child('a')}: not synced: waiting for GitSource {NS}/b" in res.stdout
    a = await declared_status(state, "a")
    ready = {c["type"]: c for c in a["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "DependencyNotReady")
    assert a["status"]["waitingFor"] == [f"GitSource {NS}/b"]
    assert await read_object(state, cm_ref("a-cm")) is None
