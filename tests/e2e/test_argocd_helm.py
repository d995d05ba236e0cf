"""An Argo CD app of apps whose children are Helm Applications, synced by the CLI with
`--interpret argocd --wait`: charts of the loopback HTTP chart repository and OCI
registry, a chart in Git with Helm options, a multi-source Application with `$values`; a
chart version bump in Git; `kubectl get helmreleases,applications` reading Synced and
Healthy as with Argo CD."""

from __future__ import annotations

import time
from pathlib import Path

from tests.charts.release_charts import CACHE, WEBAPP, push
from tests.e2e.argocd_helm_repo import application, write_argocd_repo
from tests.e2e.e2e_support import api_of, gitkrm, object_ref, read_objects
from tests.source.source_gitrepo import RemoteRepo
from tests.support.chartrepo import ChartRepo, chart_repo
from tests.support.registry import Registry, oci_registry

__all__ = ["chart_repo", "oci_registry"]  # fixtures


def test_an_argo_cd_app_of_helm_apps(
    tmp_path: Path, chart_repo: ChartRepo, oci_registry: Registry
) -> None:
    for v in ("1.0.0", "1.1.0"):
        chart_repo.publish(WEBAPP, v)
    push(CACHE, "0.1.0", f"{oci_registry.url}/argo-charts", tmp_path / "pkg")
    repo = RemoteRepo(tmp_path / "git")
    write_argocd_repo(repo, charts_url=chart_repo.url, oci_host=oci_registry.host, webapp="1.0.0")
    state = tmp_path / "state"
    run = ("run", "--repo", repo.url, "--path", "bootstrap", "--once", "--wait", "--timeout",
           "2m", "--interpret", "argocd,flux", "--state", str(state))  # fmt: skip
    started = time.monotonic()
    done = gitkrm(*run, cwd=tmp_path)
    first = time.monotonic() - started
    assert done.returncode == 0, done.stderr

    deploy, cm, hook, cache, tools, multi = read_objects(
        state,
        object_ref("Deployment", "shop", "shop", "apps"),
        object_ref("ConfigMap", "shop-config", "shop"),
        object_ref("ConfigMap", "shop-migrated", "shop"),
        object_ref("Service", "cache", "cache"),
        object_ref("Service", "tools", "tools"),
        object_ref("ConfigMap", "multi-config", "multi"),
    )
    assert deploy["spec"]["replicas"] == 2  # valuesObject
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":2.1")
    assert cm["data"]["message"] == "from-argocd"
    # a Helm pre-install hook ran as a PreSync hook
    assert hook["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PreSync"
    assert cache["metadata"]["annotations"]["size"] == "2Gi"  # OCI, values
    assert tools["metadata"]["annotations"]["size"] == "8Mi"  # a chart in Git, valueFiles
    assert multi["data"]["message"] == "from-the-values-repository"  # $values
    gadgets = object_ref(
        "CustomResourceDefinition", "gadgets.webapp.example.com", None, "apiextensions.k8s.io"
    )
    read_objects(state, gadgets)  # the chart's crds/, from webapp (multi skips them: skipCrds)

    # A chart version bump in Git: Argo CD renders it as `helm template` does (an install),
    # and runs the chart's pre-upgrade-or-install hook again.
    repo.write(
        "apps/webapp.yaml",
        application("webapp", "shop", sources=[{
            "repoURL": chart_repo.url, "chart": "webapp", "targetRevision": "1.1.0",
            "helm": {"releaseName": "shop", "valuesObject": {"message": "from-argocd"}}}]),
    )  # fmt: skip
    repo.commit("webapp 1.1.0")
    repo.push()
    started = time.monotonic()
    bumped = gitkrm(*run, cwd=tmp_path)
    resync = time.monotonic() - started
    assert bumped.returncode == 0, bumped.stderr
    cm, hook = read_objects(
        state,
        object_ref("ConfigMap", "shop-config", "shop"),
        object_ref("ConfigMap", "shop-migrated", "shop"),
    )
    assert cm["data"]["chartVersion"] == "1.1.0"
    assert cm["data"]["installing"] == "true"  # helm template: always an install
    assert hook["data"]["version"] == "1.1.0"

    with api_of(state, tmp_path) as kubectl:
        table = kubectl.run("get", "helmreleases,applications", "-A").stdout
    rows = {line.split()[1]: line.split() for line in table.splitlines()[1:] if line.strip()}
    for name in ("root", "webapp", "cache", "tools", "multi"):
        row = rows[f"application.argoproj.io/{name}"]
        assert row[2:4] == ["Synced", "Healthy"], table
    print(f"argocd Helm apps: first sync {first:.2f}s, sync of a version bump {resync:.2f}s")
