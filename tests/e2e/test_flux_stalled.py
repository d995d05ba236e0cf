"""A Flux Kustomization gitkrm can't read (a `sourceRef` kind it does not serve: a Bucket) is
Stalled at once, as Flux marks a spec that only a change can fix, so whatever waits on it
fails instead of waiting out its timeout (`run --once` on Flux's multi-tenancy example
waited 10 minutes on one; it ends in 2 s now)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.e2e_support import object_ref, read_object, run_bootstrap
from tests.e2e.manifests import kustomization, namespace
from tests.source.source_gitrepo import RemoteRepo


async def test_an_unreadable_kustomization_is_stalled_and_its_parent_fails_at_once(
    repo: RemoteRepo, state: Path
) -> None:
    repo.write("bootstrap/ns.yaml", namespace("flux-system"))
    repo.write("bootstrap/infra.yaml", kustomization("infra", "./infra"))
    repo.write("infra/controller.yaml",
               kustomization("controller", "./", source=("Bucket", "controller")))  # fmt: skip
    repo.commit("infra")
    repo.push()
    res = run_bootstrap(repo.url, state, interpret="flux")
    assert res.returncode == 1, res.stdout + res.stderr
    obj = await read_object(
        state,
        object_ref("Kustomization", "controller", "flux-system", "kustomize.toolkit.fluxcd.io"),
    )
    assert obj is not None
    conditions = {c["type"]: c for c in obj["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "False"
    assert conditions["Stalled"]["status"] == "True"
    assert "Bucket" in conditions["Stalled"]["message"]
