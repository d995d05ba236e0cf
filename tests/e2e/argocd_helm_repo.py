"""An Argo CD app of apps whose children are Helm Applications (written for these tests and
the benchmark): `bootstrap/root.yaml` is the root Application over `apps/`, which holds a
chart of the loopback HTTP chart repository, a chart of the loopback OCI registry (written
without a scheme, as Argo CD does), a chart in the repository itself with Helm options,
and a multi-source Application whose value file comes from this repository's `values/`
through a `ref` source."""

from __future__ import annotations

import json
from typing import Any

from tests.charts.release_charts import CACHE
from tests.source.source_gitrepo import RemoteRepo

ARGOCD = "argocd"


def application(
    name: str, dest: str, *, sources: list[dict[str, Any]], create_namespace: bool = True
) -> str:
    policy: dict[str, Any] = {"automated": {"prune": True, "selfHeal": True}}
    if create_namespace:
        policy["syncOptions"] = ["CreateNamespace=true"]
    spec: dict[str, Any] = {
        "project": "default",
        "destination": {"server": "https://kubernetes.default.svc", "namespace": dest},
        "syncPolicy": policy,
    }
    if len(sources) == 1:
        spec["source"] = sources[0]
    else:
        spec["sources"] = sources
    body = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": name,
            "namespace": ARGOCD,
            "finalizers": ["resources-finalizer.argocd.argoproj.io"],
        },
        "spec": spec,
    }
    return json.dumps(body, indent=1) + "\n"


def write_argocd_repo(git: RemoteRepo, *, charts_url: str, oci_host: str, webapp: str) -> str:
    git.write(
        "bootstrap/root.yaml",
        f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ARGOCD}}}\n---\n"
        + application(
            "root",
            ARGOCD,
            sources=[{"repoURL": git.url, "targetRevision": "HEAD", "path": "apps"}],
            create_namespace=False,
        ),
    )
    helm = {"releaseName": "shop", "valuesObject": {"message": "from-argocd", "replicas": 2},
            "parameters": [{"name": "image.tag", "value": "2.1"}]}  # fmt: skip
    git.write(
        "apps/webapp.yaml",
        application(
            "webapp",
            "shop",
            sources=[
                {"repoURL": charts_url, "chart": "webapp", "targetRevision": webapp, "helm": helm},
            ],
        ),
    )
    git.write(
        "apps/cache.yaml",
        application(
            "cache",
            "cache",
            sources=[
                {
                    "repoURL": f"{oci_host}/argo-charts",
                    "chart": "cache",
                    "targetRevision": "0.x",
                    "helm": {"values": "size: 2Gi\n"},
                },
            ],
        ),
    )
    git.write(
        "apps/tools.yaml",
        application(
            "tools",
            "tools",
            sources=[
                {
                    "repoURL": git.url,
                    "targetRevision": "HEAD",
                    "path": "charts/tools",
                    "helm": {"valueFiles": ["values-extra.yaml"]},
                },
            ],
        ),
    )
    git.write(
        "apps/multi.yaml",
        application(
            "multi",
            "multi",
            sources=[
                {
                    "repoURL": charts_url,
                    "chart": "webapp",
                    "targetRevision": "^1",
                    "helm": {"valueFiles": ["$values/values/multi.yaml"], "skipCrds": True},
                },
                {"repoURL": git.url, "targetRevision": "HEAD", "ref": "values"},
            ],
        ),
    )
    git.write("values/multi.yaml", "message: from-the-values-repository\nreplicas: 3\n")
    for f in CACHE.rglob("*"):
        if f.is_file():
            git.write(f"charts/tools/{f.relative_to(CACHE).as_posix()}", f.read_bytes())
    git.write("charts/tools/values-extra.yaml", "size: 8Mi\n")
    sha = git.commit("an Argo CD app of Helm apps")
    git.push()
    return sha
