"""An Argo CD app of apps, written here in the shape of Argo CD's example repositories
(which carry no licence, so nothing is copied): `bootstrap/` holds the root Application,
whose path `apps/` holds the child Applications, each over a directory (`guestbook/`) or a
kustomize source (`kustomize-guestbook/`), with automated prune and selfHeal,
CreateNamespace=true and a sync wave; and a few that exercise the rest (an Application
without automated sync, one without the resources finalizer, one on a second repository)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.manifests import namespace
from tests.source.source_gitrepo import RemoteRepo
from tests.support import builders
from tests.support.manifests import yaml_text

ARGOCD = "argocd"
FINALIZER = "resources-finalizer.argocd.argoproj.io"


PROJECT = f"""\
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: default
  namespace: {ARGOCD}
spec:
  sourceRepos: ['*']
  destinations: [{{namespace: '*', server: '*'}}]
  clusterResourceWhitelist: [{{group: '*', kind: '*'}}]
"""


def application(
    name: str,
    repo_url: str,
    path: str,
    *,
    dest: str,
    wave: int | None = None,
    finalizer: bool = True,
    automated: bool = True,
    create_namespace: bool = True,
    **source: Any,
) -> str:
    md: dict[str, Any] = {"name": name, "namespace": ARGOCD}
    if finalizer:
        md["finalizers"] = [FINALIZER]
    if wave is not None:
        md["annotations"] = {"argocd.argoproj.io/sync-wave": str(wave)}
    policy: dict[str, Any] = {}
    if automated:
        policy["automated"] = {"prune": True, "selfHeal": True}
    if create_namespace:
        policy["syncOptions"] = ["CreateNamespace=true"]
    spec = {
        "project": "default",
        "source": {"repoURL": repo_url, "targetRevision": "HEAD", "path": path, **source},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": dest},
        "syncPolicy": policy,
    }
    body = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": md,
            "spec": spec}  # fmt: skip
    return json.dumps(body, indent=1) + "\n"


def application_set(
    name: str,
    generator: dict[str, Any],
    *,
    app_name: str,
    repo_url: str,
    path: str,
    destination: dict[str, str],
    sync_policy: dict[str, Any] | None = None,
    **spec: Any,
) -> str:
    """An ApplicationSet of one generator whose template is an Application `app_name` of
    `path` of `repo_url` (both templates: `{{path}}`) in the in-cluster `destination`
    unless that names a `server`; keyword arguments are more of its spec."""
    app_spec: dict[str, Any] = {
        "project": "default",
        "source": {"repoURL": repo_url, "targetRevision": "HEAD", "path": path},
        "destination": {"server": "https://kubernetes.default.svc", **destination},
    }
    if sync_policy is not None:
        app_spec["syncPolicy"] = sync_policy
    template = {"metadata": {"name": app_name}, "spec": app_spec}
    body = {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": name, "namespace": ARGOCD},
        "spec": {"generators": [generator], "template": template, **spec},
    }  # fmt: skip
    return json.dumps(body, indent=1) + "\n"


def ui(name: str, *, replicas: int = 1, image: str = "example.test/guestbook-ui:0.2") -> str:
    """A Deployment and its Service, with no namespace (the destination's is used)."""
    app = builders.deployment(
        name, None, replicas=replicas, image=image, container=name, port=80,
        revisionHistoryLimit=3,
    )  # fmt: skip
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"ports": [{"port": 80, "targetPort": 80}], "selector": {"app": name}},
    }
    return yaml_text(app, service)


def write_app_of_apps(repo: RemoteRepo, *, other: RemoteRepo | None = None) -> None:
    """The whole layout into `repo` (not committed)."""
    repo.write("bootstrap/argocd-ns.yaml", namespace(ARGOCD))
    repo.write("bootstrap/project.yaml", PROJECT)
    repo.write("bootstrap/root.yaml", application("root", repo.url, "apps", dest=ARGOCD,
                                                  create_namespace=False))  # fmt: skip
    repo.write("apps/guestbook.yaml", application("guestbook", repo.url, "guestbook",
                                                  dest="guestbook", wave=1))  # fmt: skip
    repo.write(
        "apps/kustomize-guestbook.yaml",
        application("kustomize-guestbook", repo.url, "kustomize-guestbook", dest="kustomized",
                    wave=2, kustomize={
                        "namePrefix": "kust-", "replicas": [{"name": "guestbook-ui", "count": 2}],
                        "patches": [{"path": "../shared-patches/team.yaml",
                                     "target": {"kind": "Deployment"}}],
                    }),
    )  # fmt: skip
    repo.write(
        "shared-patches/team.yaml", "- {op: add, path: /metadata/labels, value: {team: a}}\n"
    )
    repo.write("apps/manual.yaml", application("manual", repo.url, "manual", dest="manual",
                                               automated=False))  # fmt: skip
    repo.write("apps/keeper.yaml", application("keeper", repo.url, "keeper", dest="keeper",
                                               finalizer=False))  # fmt: skip
    repo.write("guestbook/guestbook-ui.yaml", ui("guestbook-ui"))
    repo.write("guestbook/notes/README.yaml.txt", "not a manifest\n")
    repo.write("guestbook/extra/ignored.yaml", "apiVersion: v1\nkind: Nope\n")  # no recurse
    repo.write(
        "kustomize-guestbook/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [guestbook-ui.yaml]\n",
    )
    repo.write("kustomize-guestbook/guestbook-ui.yaml", ui("guestbook-ui"))
    repo.write("manual/cm.yaml", _cm("manual-cm"))
    repo.write("keeper/cm.yaml", _cm("keeper-cm"))
    if other is not None:
        repo.write("apps/other.yaml", application("other", other.url, ".", dest="other"))


def write_other(other: RemoteRepo) -> None:
    other.write("cm.yaml", _cm("other-cm"))


def other_repository(root: Path) -> RemoteRepo:
    """A second repository (its ConfigMap `other-cm`), committed and pushed, on `master`:
    an Application's `targetRevision: HEAD` follows its default branch, whatever its name."""
    second = RemoteRepo(root / "other", branch="master")
    write_other(second)
    second.commit("other")
    second.push()
    return second


def _cm(name: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata: {{a: '1'}}\n"


def write_bootstrap(repo: RemoteRepo, url: str | None = None) -> None:
    """`bootstrap/`: the argocd namespace and the root Application over `apps/` of `url`
    (the repository's own by default)."""
    repo.write("bootstrap/argocd-ns.yaml", namespace(ARGOCD))
    repo.write("bootstrap/root.yaml", application("root", url or repo.url, "apps", dest=ARGOCD,
                                                  create_namespace=False))  # fmt: skip
