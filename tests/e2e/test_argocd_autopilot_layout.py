"""A repository in the layout argocd-autopilot writes, hand-written here, through the real
CLI: `run --once --path bootstrap --path-rules argocd --interpret argocd`. `bootstrap/`
holds Applications beside directories of their own (`argo-cd/`, a kustomization of a
remote base; `cluster-resources/`, read by an ApplicationSet's git files generator over
`*.json`); as Argo CD's bootstrap Application reads it, a directory source, only its own
files are the top source's. `projects/` holds an AppProject and an ApplicationSet whose
git files generator reads `apps/**/<project>/config.json`. The remote base is an error
naming the Application; everything else syncs."""

from __future__ import annotations

import json
from pathlib import Path

from gitkrm.agent.tree.naming import child_name
from gitkrm.krm import ObjectRef
from tests.e2e.argocd_apps import ARGOCD
from tests.e2e.e2e_support import get_or_none, reading, run_bootstrap
from tests.e2e.manifests import deployment, namespace
from tests.source.source_gitrepo import RemoteRepo

REMOTE_BASE = "github.com/example/installer/manifests/base?ref=v1.0.0"


def app_ref(name: str) -> ObjectRef:
    return ObjectRef(group="argoproj.io", kind="Application", name=name, namespace=ARGOCD)


def application(name: str, url: str, path: str, *, recurse: bool = False) -> str:
    directory = "\n    directory: {recurse: true}" if recurse else ""
    return f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {name}
  namespace: {ARGOCD}
  finalizers: [resources-finalizer.argocd.argoproj.io]
spec:
  project: default
  source:
    repoURL: {url}
    path: {path}{directory}
  destination: {{server: 'https://kubernetes.default.svc', namespace: {ARGOCD}}}
  syncPolicy:
    automated: {{selfHeal: true, prune: true, allowEmpty: true}}
"""


def application_set(name: str, url: str, files: str, *, project: str, app: str, path: str) -> str:
    return f"""\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: {name}
  namespace: {ARGOCD}
spec:
  generators:
  - git:
      repoURL: {url}
      revision: ""
      requeueAfterSeconds: 20
      files:
      - path: {files}
      template: {{metadata: {{}}, spec: {{destination: {{}}, project: ""}}}}
  template:
    metadata:
      name: '{app}'
      namespace: {ARGOCD}
      labels: {{app.kubernetes.io/managed-by: argocd-autopilot}}
    spec:
      project: {project}
      source: {{repoURL: '{url}', path: '{path}'}}
      destination: {{server: '{{{{ destServer }}}}', namespace: '{{{{ destNamespace }}}}'}}
      ignoreDifferences:
      - {{group: argoproj.io, kind: Application, jsonPointers: [/status]}}
      syncPolicy:
        automated: {{allowEmpty: true, prune: true, selfHeal: true}}
"""


PROJECT = f"""\
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: testing
  namespace: {ARGOCD}
  annotations: {{argocd.argoproj.io/sync-wave: "-2"}}
spec:
  sourceRepos: ['*']
  destinations: [{{namespace: '*', server: '*'}}]
  clusterResourceWhitelist: [{{group: '*', kind: '*'}}]
"""


def write_layout(repo: RemoteRepo) -> None:
    url = repo.url
    repo.write("bootstrap/argo-cd.yaml", application("argo-cd", url, "bootstrap/argo-cd"))
    repo.write(
        "bootstrap/argo-cd/kustomization.yaml",
        f"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: ['{REMOTE_BASE}']\n",
    )
    repo.write("bootstrap/root.yaml", application("root", url, "projects", recurse=True))
    repo.write(
        "bootstrap/cluster-resources.yaml",
        application_set(
            "cluster-resources", url, "bootstrap/cluster-resources/*.json", project="default",
            app="cluster-resources-{{name}}", path="bootstrap/cluster-resources/{{name}}",
        ).replace("{{ destServer }}", "{{server}}").replace("{{ destNamespace }}", ""),
    )  # fmt: skip
    repo.write(
        "bootstrap/cluster-resources/in-cluster.json",
        json.dumps({"name": "in-cluster", "server": "https://kubernetes.default.svc"}),
    )
    repo.write("bootstrap/cluster-resources/in-cluster/README.md", "# cluster resources\n")
    repo.write("bootstrap/cluster-resources/in-cluster/shared-ns.yaml", namespace("shared"))
    repo.write("projects/README.md", "# projects\n")
    repo.write(
        "projects/testing.yaml",
        PROJECT
        + "---\n"
        + application_set(
            "testing", url, "apps/**/testing/config.json", project="testing",
            app="testing-{{ userGivenName }}", path="{{ srcPath }}",
        ),
    )  # fmt: skip
    repo.write(
        "apps/hello/base/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [deployment.yaml]\n",
    )
    repo.write(
        "apps/hello/base/deployment.yaml",
        deployment("hello", replicas=1, image="example.org/hello:1.0"),
    )
    repo.write(
        "apps/hello/overlays/testing/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "namespace: hello\nresources: [../../base, namespace.yaml]\n",
    )
    repo.write("apps/hello/overlays/testing/namespace.yaml", namespace("hello"))
    config = {
        "appName": "hello", "userGivenName": "hello", "destNamespace": "hello",
        "destServer": "https://kubernetes.default.svc", "srcPath": "apps/hello/overlays/testing",
        "srcRepoURL": url, "srcTargetRevision": "", "labels": None, "annotations": None,
    }  # fmt: skip
    repo.write("apps/hello/overlays/testing/config.json", json.dumps(config))
    repo.commit("autopilot layout")
    repo.push()


async def test_an_autopilot_layout_bootstraps_with_argo_cds_path_rules(
    repo: RemoteRepo, state: Path
) -> None:
    write_layout(repo)
    res = run_bootstrap(repo.url, state, "--path-rules", "argocd", "--wait", "--timeout", "2m")
    assert res.returncode == 1, res.stdout + res.stderr  # the remote base only
    argo_cd = child_name(app_ref("argo-cd"))
    assert f"{argo_cd}: FAILED (1 error(s) above)" in res.stdout
    assert f"resources entry '{REMOTE_BASE}' is remote" in res.stderr
    # the top source read bootstrap/ itself only: three objects, no kustomization, no JSON
    assert res.stdout.startswith("default: synced revision "), res.stdout
    assert ": 3 created," in res.stdout.splitlines()[0]
    failed = [line.strip() for line in res.stdout.splitlines() if "FAILED" in line]
    assert [line.split(":")[0] for line in failed] == [argo_cd]
    async with reading(state) as store:
        hello = await get_or_none(store, app_ref("testing-hello"))
        assert hello is not None
        assert hello["spec"]["project"] == "testing"
        assert (hello["status"]["sync"]["status"], hello["status"]["health"]["status"]) == (
            "Synced", "Healthy",
        )  # fmt: skip
        deploy = ObjectRef(group="apps", kind="Deployment", name="hello", namespace="hello")
        live = await get_or_none(store, deploy)
        assert live is not None
        assert live["status"]["availableReplicas"] == 1
        shared = await get_or_none(store, ObjectRef(group="", kind="Namespace", name="shared"))
        assert shared is not None  # cluster-resources-in-cluster
        assert await get_or_none(store, app_ref("cluster-resources-in-cluster")) is not None
