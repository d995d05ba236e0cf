"""The Helm halves of a Flux and an Argo CD repository synced through the command line
(`run --once --wait`, whole `gitkrm` processes, medians of several runs), each beside a
baseline measured in the same run: one plain source holding one chart in Git.

- helmreleases.flux_*: tests/e2e/flux_helm_repo.py under `--interpret flux` (three
  HelmReleases: a chart of the loopback HTTP chart repository with valuesFrom, dependsOn
  and a post-renderer, an OCIRepository chart, a chart in Git);
- helmreleases.argocd_*: tests/e2e/argocd_helm_repo.py under `--interpret argocd` (a root
  Application and four Helm Applications: HTTP, OCI, Git, and a multi-source one);
- first_sync into an empty state dir, resync with nothing changed.

Needs Debian's docker-registry (the loopback OCI registry of the tests).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from benchmarks.cli_runs import first_and_again, print_ratio
from tests.charts.release_charts import CACHE, WEBAPP, push
from tests.e2e.argocd_helm_repo import write_argocd_repo
from tests.e2e.flux_helm_repo import publish, write_flux_repo
from tests.source.source_gitrepo import RemoteRepo
from tests.support.chartrepo import ChartRepo
from tests.support.registry import start_registry, stop_registry

RUNS = 3


def _line(name: str, got: list[float], base: list[float]) -> None:
    print_ratio(f"helmreleases.{name}", got, base, baseline="one chart in Git")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-helmreleases-") as tmp:
        root = Path(tmp)
        (root / "charts").mkdir()
        charts = ChartRepo(root / "charts")
        proc, registry = start_registry(root / "registry")
        try:
            publish(charts, registry.url, root / "pkg")
            push(CACHE, "0.1.0", f"{registry.url}/argo-charts", root / "pkg")
            flux = RemoteRepo(root / "flux")
            write_flux_repo(flux, charts_url=charts.url, oci_url=registry.url)
            argo = RemoteRepo(root / "argo")
            write_argocd_repo(argo, charts_url=charts.url, oci_host=registry.host, webapp="1.0.0")
            plain = RemoteRepo(root / "plain")
            shutil.copytree(WEBAPP, plain.work / "webapp")
            plain.write("ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n")
            plain.commit("one chart")
            plain.push()
            cases = {
                "flux": (flux.url, "--path", "deploy", "--interpret", "flux"),
                "argocd": (argo.url, "--path", "bootstrap", "--interpret", "argocd"),
                "plain": (plain.url, "--namespace", "web"),
            }
            first, again = first_and_again(root, cases, RUNS)
            for peer in ("flux", "argocd"):
                _line(f"{peer}_first_sync", first[peer], first["plain"])
                _line(f"{peer}_resync", again[peer], again["plain"])
        finally:
            stop_registry(proc)
            charts.close()


if __name__ == "__main__":
    main()
