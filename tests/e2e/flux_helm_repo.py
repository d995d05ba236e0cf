"""A Flux-layout repository of HelmReleases (written for these tests and the benchmark):
`deploy/infrastructure/` holds the chart sources (a HelmRepository over the loopback HTTP
chart repository, an OCIRepository in the loopback OCI registry, the repository's own
GitRepository) and two HelmReleases; `deploy/apps/` a HelmRelease whose values come from a
ConfigMap and a Secret, which depends on one of them and post-renders its Deployment.
`charts/tools` is a chart kept in the repository itself."""

from __future__ import annotations

from pathlib import Path

from tests.charts.release_charts import CACHE, WEBAPP, push
from tests.e2e.manifests import chart_in_git, git_repository, helm_release
from tests.source.source_gitrepo import RemoteRepo
from tests.support.chartrepo import ChartRepo

SECRET_VALUE = "sup3r-s3cret-pw"


def publish(charts: ChartRepo, oci_url: str, tmp: Path) -> None:
    for v in ("1.0.0", "1.1.0", "2.0.0"):
        charts.publish(WEBAPP, v)
    for v in ("0.1.0", "0.2.0"):
        push(CACHE, v, f"{oci_url}/flux-charts", tmp)


def webapp(version: str) -> str:
    return f"""\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {{name: webapp, namespace: apps}}
spec:
  interval: 10m
  chart:
    spec:
      chart: webapp
      version: "{version}"
      sourceRef: {{kind: HelmRepository, name: charts, namespace: flux-system}}
  dependsOn: [{{name: cache, namespace: flux-system}}]
  valuesFrom:
  - {{kind: ConfigMap, name: webapp-values}}
  - {{kind: Secret, name: webapp-secret}}
  - {{kind: Secret, name: webapp-secret, valuesKey: tag, targetPath: image.tag}}
  values: {{replicas: 2}}
  postRenderers:
  - kustomize:
      patches:
      - target: {{kind: Deployment}}
        patch: |
          - op: add
            path: /metadata/labels/post-rendered
            value: "yes"
"""


def write_flux_repo(
    git: RemoteRepo, *, charts_url: str, oci_url: str, credentials: tuple[str, str] | None = None
) -> str:
    """The repository; with `credentials` the HelmRepository reads them from a Secret."""
    auth = ""
    if credentials is not None:
        user, password = credentials
        auth = (
            "---\napiVersion: v1\nkind: Secret\nmetadata: {name: charts-auth, namespace: "
            f"flux-system}}\nstringData: {{username: {user}, password: {password}}}\n"
        )
    git.write(
        "deploy/infrastructure/namespaces.yaml",
        "\n---\n".join(
            f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {n}}}\n"
            for n in ("flux-system", "apps")
        ),
    )
    git.write(
        "deploy/infrastructure/sources.yaml",
        f"""\
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {{name: charts, namespace: flux-system}}
spec: {{url: "{charts_url}", interval: 1h{", secretRef: {name: charts-auth}" if auth else ""}}}
{auth}---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {{name: cache, namespace: flux-system}}
spec: {{url: "{oci_url}/flux-charts/cache", interval: 1h, ref: {{semver: "<1"}}}}
---
{git_repository("flux-system", git.url)}""",
    )
    cache = helm_release(
        "cache", target="infra", install={"createNamespace": True},
        chartRef={"kind": "OCIRepository", "name": "cache"}, values={"size": "256Mi"},
    )  # fmt: skip
    tools = helm_release(
        "tools", target="apps", releaseName="tools", chart=chart_in_git("./charts/tools"),
        test={"enable": True},
    )  # fmt: skip
    git.write("deploy/infrastructure/releases.yaml", cache + "---\n" + tools)
    git.write(
        "deploy/apps/values.yaml",
        f"""\
apiVersion: v1
kind: ConfigMap
metadata: {{name: webapp-values, namespace: apps}}
data:
  values.yaml: |
    message: from-configmap
    replicas: 1
---
apiVersion: v1
kind: Secret
metadata: {{name: webapp-secret, namespace: apps}}
stringData:
  values.yaml: |
    database: {{password: {SECRET_VALUE}}}
  tag: "3.1"
""",
    )
    git.write("deploy/apps/webapp.yaml", webapp("1.0.0"))
    for f in CACHE.rglob("*"):
        if f.is_file():
            git.write(f"charts/tools/{f.relative_to(CACHE).as_posix()}", f.read_bytes())
    sha = git.commit("a Flux layout of HelmReleases")
    git.push()
    return sha
