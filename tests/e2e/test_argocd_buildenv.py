"""Argo CD's build environment (`$ARGOCD_APP_NAME`, `$ARGOCD_APP_REVISION_SHORT`, ...) in
an app of apps, through the real CLI on a real bare repository: a chart in Git whose value
file is named after the Application and whose parameters name the revision, a kustomize
source with substituted labels and annotations, and a jsonnet directory with an external
variable; a second commit moves the revision-dependent values."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.argocd_apps import application, write_bootstrap
from tests.e2e.e2e_support import object_ref, read_objects, run_bootstrap
from tests.source.source_gitrepo import RemoteRepo

CHART = "apiVersion: v2\nname: envchart\nversion: 0.1.0\n"
TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: helm-env
data:
  rev: {{ .Values.rev | quote }}
  who: {{ .Values.who | quote }}
  env: {{ .Values.env | quote }}
"""
KUSTOMIZATION = "resources: [cm.yaml]\n"
KUST_CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kust-env\ndata:\n  a: b\n"
JSONNET = """\
[{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'jsonnet-env' },
   data: { rev: std.extVar('rev'), app: std.extVar('app') } }]
"""


def write_apps(repo: RemoteRepo) -> None:
    write_bootstrap(repo)
    helm = {
        "valueFiles": ["values-$ARGOCD_APP_NAME.yaml"],
        "parameters": [
            {"name": "rev", "value": "$ARGOCD_APP_REVISION_SHORT"},
            {"name": "who", "value": "${ARGOCD_APP_NAMESPACE}/$$HOME"},
        ],
    }
    repo.write("apps/helm.yaml", application("helm-env", repo.url, "chart", dest="hns", helm=helm))
    kust = {
        "commonLabels": {"app": "$ARGOCD_APP_NAME"},
        "labelWithoutSelector": True,
        "commonAnnotations": {
            "path": "$ARGOCD_APP_SOURCE_PATH",
            "project": "$ARGOCD_APP_PROJECT_NAME",
        },
        "commonAnnotationsEnvsubst": True,
    }
    repo.write(
        "apps/kust.yaml", application("kust-env", repo.url, "kust", dest="kns", kustomize=kust)
    )
    jsonnet = {
        "extVars": [
            {"name": "rev", "value": "$ARGOCD_APP_REVISION"},
            {"name": "app", "value": "$ARGOCD_APP_NAME"},
        ]
    }
    repo.write("apps/jsonnet.yaml", application("jsonnet-env", repo.url, "jsonnet", dest="jns",
                                                directory={"jsonnet": jsonnet}))  # fmt: skip
    repo.write("chart/Chart.yaml", CHART)
    repo.write("chart/values.yaml", "rev: none\nwho: none\nenv: default\n")
    repo.write("chart/values-helm-env.yaml", "env: helm-env's own values\n")
    repo.write("chart/templates/cm.yaml", TEMPLATE)
    repo.write("kust/kustomization.yaml", KUSTOMIZATION)
    repo.write("kust/cm.yaml", KUST_CM)
    repo.write("jsonnet/env.jsonnet", JSONNET)


def test_the_build_environment_is_substituted_per_revision(tmp_path: Path) -> None:
    repo = RemoteRepo(tmp_path / "git")
    write_apps(repo)
    first = repo.commit("apps that name their build environment")
    repo.push()
    state = tmp_path / "state"
    done = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert done.returncode == 0, done.stdout + done.stderr
    helm, kust, jsonnet = read_objects(
        state,
        object_ref("ConfigMap", "helm-env", "hns"),
        object_ref("ConfigMap", "kust-env", "kns"),
        object_ref("ConfigMap", "jsonnet-env", "jns"),
    )
    assert helm["data"] == {"rev": first[:7], "who": "hns/$HOME", "env": "helm-env's own values"}
    assert kust["metadata"]["labels"]["app"] == "kust-env"
    annotations = kust["metadata"]["annotations"]
    assert (annotations["path"], annotations["project"]) == ("kust", "default")
    assert jsonnet["data"] == {"rev": first, "app": "jsonnet-env"}
    # a commit elsewhere: the revision moves, and with it what names it
    repo.write("README.md", "the revision moves\n")
    second = repo.commit("another revision")
    repo.push()
    done = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert done.returncode == 0, done.stdout + done.stderr
    helm, jsonnet = read_objects(
        state,
        object_ref("ConfigMap", "helm-env", "hns"),
        object_ref("ConfigMap", "jsonnet-env", "jns"),
    )
    assert helm["data"]["rev"] == second[:7] != first[:7]
    assert jsonnet["data"]["rev"] == second
