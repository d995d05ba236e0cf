"""`run --once` over Flux's usual layout: an infrastructure Kustomization that waits for its
HelmReleases, and a Kustomization that depends on it. The HelmReleases' own child sources
must sync before the dependent one waits on the infrastructure's health (before, the
dependent waited out the infrastructure's timeout first, and the HelmReleases never ran:
Flux's flux2-kustomize-helm-example hung five minutes)."""

from __future__ import annotations

from pathlib import Path

from tests.charts.release_charts import CACHE
from tests.e2e.e2e_support import cm_ref, read_object, run_tree
from tests.e2e.manifests import chart_in_git, helm_release, kustomization, namespace
from tests.source.source_gitrepo import RemoteRepo

RELEASE = helm_release(
    "tools", target="tools", install={"createNamespace": True}, chart=chart_in_git("./charts/tools")
)


async def test_a_dependent_waits_for_the_helmreleases_its_dependency_declared(
    repo: RemoteRepo, state: Path
) -> None:
    repo.write("clusters/dev/ns.yaml", namespace("flux-system"))
    # Named so that the dependent comes first among the children of the first pass.
    repo.write("clusters/dev/a-configs.yaml",
               kustomization("configs", "./configs", depends_on=("infra",)))  # fmt: skip
    repo.write("clusters/dev/b-infra.yaml", kustomization("infra", "./infra"))
    repo.write("infra/tools.yaml", RELEASE)
    repo.write("configs/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
               "  name: settings\n  namespace: default\ndata: {a: '1'}\n")  # fmt: skip
    for f in CACHE.rglob("*"):
        if f.is_file():
            repo.write(f"charts/tools/{f.relative_to(CACHE).as_posix()}", f.read_bytes())
    repo.commit("infra and configs")
    repo.push()
    res = run_tree(repo.url, state, path="clusters/dev", interpret="flux")
    assert res.returncode == 0, res.stdout + res.stderr
    cm = await read_object(state, cm_ref("settings"))
    assert cm is not None  # the dependent synced once the infrastructure was healthy
