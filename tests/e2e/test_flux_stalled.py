"""A Flux Kustomization gitkrm can't read (a `sourceRef` kind it does not serve: a Bucket) is
Stalled at once, as Flux marks a spec that only a change can fix, so whatever waits on it
fails instead of waiting out its timeout (`run --once` on Flux's multi-tenancy example
waited 10 minutes on one; it ends in 2 s now)."""

from __future__ import annotations

from pathlib import Path

from gitkrm.krm import ObjectRef
from tests.e2e.e2e_support import get_or_none, gitkrm, reader
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
    res = gitkrm(
        "run", "--once", "--repo", repo.url, "--path", "bootstrap", "--state", str(state),
        "--agent-name", "e2e", "--interpret", "flux", cwd=state.parent,
    )  # fmt: skip
    assert res.returncode == 1, res.stdout + res.stderr
    store = await reader(state)
    try:
        obj = await get_or_none(store, ObjectRef(
            group="kustomize.toolkit.fluxcd.io", kind="Kustomization", name="controller",
            namespace="flux-system"))  # fmt: skip
    finally:
        await store.close()
    assert obj is not None
    conditions = {c["type"]: c for c in obj["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "False"
    assert conditions["Stalled"]["status"] == "True"
    assert "Bucket" in conditions["Stalled"]["message"]
