"""`run --once --interpret flux` of a fleet whose application repositories are declared in
`infrastructure/sources/` (a GitRepository per application) and whose application
Kustomizations, in the cluster's directory, depend on `infrastructure`: when the tree is
first read, their GitRepository is not there yet; `infrastructure` makes it.

Flux retries such a Kustomization until its source exists; gitkrm reads it again after
each pass, so the application syncs in the same run (before: "GitRepository
flux-system/api not found", exit 1, and the application never synced)."""

from __future__ import annotations

from pathlib import Path

from gitkrm.krm.conditions import find_condition
from tests.e2e.e2e_support import cm_ref, object_ref, read_each, run_tree
from tests.e2e.manifests import configmap, git_repository, kustomization, namespace
from tests.source.source_gitrepo import RemoteRepo


async def test_an_app_whose_gitrepository_its_dependency_applies_syncs_in_the_same_run(
    tmp_path: Path, state: Path
) -> None:
    app = RemoteRepo(tmp_path / "api")
    app.write("k8s/staging/settings.yaml", configmap("api-settings", {"a": "1"}))
    app.commit("api")
    app.push()
    fleet = RemoteRepo(tmp_path / "fleet")
    fleet.write("clusters/cluster-1/ns.yaml", namespace("flux-system"))
    fleet.write(
        "clusters/cluster-1/infrastructure.yaml",
        kustomization("infrastructure", "./infrastructure", wait=False),
    )
    api = kustomization(
        "api", "./k8s/staging", source=("GitRepository", "api"), depends_on=("infrastructure",)
    )
    fleet.write("clusters/cluster-1/apps.yaml", api)
    fleet.write("infrastructure/sources/api.yaml", git_repository("api", app.url))
    fleet.commit("fleet")
    fleet.push()
    res = run_tree(fleet.url, state, path="clusters/cluster-1", interpret="flux")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "error:" not in res.stdout, out
    synced, ks = await read_each(
        state,
        cm_ref("api-settings"),
        object_ref("Kustomization", "api", "flux-system", "kustomize.toolkit.fluxcd.io"),
    )
    assert synced is not None
    assert ks is not None
    ready = find_condition((ks.get("status") or {}).get("conditions"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("True", "ReconciliationSucceeded")
