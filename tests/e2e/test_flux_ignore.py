"""A Flux GitRepository's `spec.ignore` through the CLI: its .sourceignore lines leave
files of a Kustomization's path out (as source-controller leaves them out of the artifact),
and an edit of them alone takes effect at the next sync."""

from __future__ import annotations

from pathlib import Path

from gitkrm.krm import ObjectRef
from tests.e2e.e2e_support import cm_ref, read_each, run_tree
from tests.e2e.manifests import configmap, git_repository, kustomization, namespace
from tests.source.source_gitrepo import RemoteRepo

KS = ObjectRef(group="kustomize.toolkit.fluxcd.io", kind="Kustomization", name="apps",
               namespace="flux-system")  # fmt: skip


def write_root(repo: RemoteRepo, ignore: str) -> None:
    repo.write("clusters/dev/ns.yaml", namespace("flux-system"))
    repo.write("clusters/dev/source.yaml", git_repository("flux-system", repo.url, ignore=ignore))
    repo.write("clusters/dev/apps.yaml", kustomization("apps", "./apps", wait=None))


async def test_a_git_repositorys_ignore_leaves_files_out(repo: RemoteRepo, state: Path) -> None:
    write_root(repo, "# drafts are not deployed\n**/*.draft.yaml\n")
    repo.write("apps/settings.yaml", configmap("settings", {"a": "1"}))
    repo.write("apps/next.draft.yaml", configmap("next", {"a": "2"}))
    repo.commit("a draft beside the settings")
    repo.push()
    res = run_tree(repo.url, state, path="clusters/dev", interpret="flux")
    assert res.returncode == 0, res.stdout + res.stderr
    settings, draft, ks = await read_each(state, cm_ref("settings"), cm_ref("next"), KS)
    assert settings is not None
    assert draft is None, "a file spec.ignore names was applied"
    assert ks is not None
    said = [c for c in ks["status"]["conditions"] if c["type"] == "NotHonoured"]
    assert not any("ignore" in c["message"] for c in said), said

    write_root(repo, "# nothing left out\n")
    repo.commit("the draft goes out")
    repo.push()
    res = run_tree(repo.url, state, path="clusters/dev", interpret="flux")
    assert res.returncode == 0, res.stdout + res.stderr
    [draft] = await read_each(state, cm_ref("next"))
    assert draft is not None
