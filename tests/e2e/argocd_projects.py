"""Argo CD AppProjects and the Applications that use them, written in the shapes Argo CD's
documentation and e2e tests use (a project per team, `sourceRepos` with a `!` pattern,
destinations by server and namespace glob, resource white- and blacklists,
`sourceNamespaces`, `syncWindows`), for the project tests. Nothing is copied."""

from __future__ import annotations

import json
from typing import Any

import yaml

from tests.e2e.argocd_apps import ARGOCD, application
from tests.e2e.manifests import namespace
from tests.source.source_gitrepo import RemoteRepo

IN_CLUSTER = "https://kubernetes.default.svc"


def app_project(name: str, *, ns: str = ARGOCD, **spec: Any) -> str:
    """An AppProject as YAML, in the order Argo CD's documentation writes it."""
    body = {"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}  # fmt: skip
    return yaml.safe_dump(body, sort_keys=False)


def in_project(text: str, project: str, *, ns: str | None = None) -> str:
    """An Application of `argocd_apps.application` moved into a project (and namespace)."""
    body = json.loads(text)
    body["spec"]["project"] = project
    if ns is not None:
        body["metadata"]["namespace"] = ns
    return yaml.safe_dump(body, sort_keys=False)


def team_a(*, permissive: bool, other_url: str) -> str:
    """`team-a`: strict (every rule refuses one Application), or permissive (each of
    those rules lets it through)."""
    if not permissive:
        return app_project(
            "team-a",
            sourceRepos=[f"!{other_url}", "*"],
            destinations=[{"server": IN_CLUSTER, "namespace": "team-a-*"}],
            clusterResourceWhitelist=[{"group": "", "kind": "Namespace"}],
            namespaceResourceBlacklist=[{"group": "", "kind": "Secret"}],
        )  # fmt: skip
    return app_project(
        "team-a",
        sourceRepos=["*"],
        sourceNamespaces=["apps-*"],
        destinations=[{"server": IN_CLUSTER, "namespace": "team-a-*"},
                      {"name": "in-cluster", "namespace": "prod"},
                      {"server": "*", "namespace": "stray-*"}],
        clusterResourceWhitelist=[{"group": "", "kind": "Namespace"},
                                  {"group": "rbac.authorization.k8s.io", "kind": "Cluster*"}],
        namespaceResourceWhitelist=[{"group": "", "kind": "*"}],
    )  # fmt: skip


def team_b(*, permissive: bool) -> str:
    """`team-b`: a `!` destination (any namespace but one), or any namespace."""
    return app_project(
        "team-b",
        sourceRepos=["*"],
        destinations=[{"server": "*", "namespace": "*" if permissive else "!team-a-private"}],
        clusterResourceWhitelist=[{"group": "", "kind": "Namespace"}],
    )


def windows(*, permissive: bool) -> str:
    """`windows`: a deny window open all the time for `windowed`, or an allow window open
    all the time (and a deny window for other Applications)."""
    always = {"schedule": "* * * * *", "duration": "1h"}
    shut = [{"kind": "deny", **always, "applications": ["windowed"]}]
    open_ = [{"kind": "allow", **always, "applications": ["win*"]},
             {"kind": "deny", **always, "applications": ["other-*"], "andOperator": True,
              "namespaces": ["windowed"]}]  # fmt: skip
    return app_project(
        "windows",
        sourceRepos=["*"],
        destinations=[{"server": "*", "namespace": "*"}],
        clusterResourceWhitelist=[{"group": "*", "kind": "*"}],
        syncWindows=open_ if permissive else shut,
    )


def _secret(name: str) -> str:
    return (
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n"
        "stringData: {password: not-a-secret}\n"
    )


def _cm(name: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata: {{a: '1'}}\n"


CLUSTER_ROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: team-a-reader
rules:
- apiGroups: ['']
  resources: [configmaps]
  verbs: [get, list]
"""


def write_projects(repo: RemoteRepo, *, other_url: str, permissive: bool) -> None:
    """The layout into `repo` (not committed): `bootstrap/` the namespaces, projects and
    the root Application (project `default`, not in the target: Argo CD's permissive
    default); `apps/` one Application per rule."""
    repo.write("bootstrap/namespaces.yaml", namespace(ARGOCD) + "---\n" + namespace("apps-x"))
    projects = [team_a(permissive=permissive, other_url=other_url),
                team_b(permissive=permissive), windows(permissive=permissive)]  # fmt: skip
    if permissive:
        projects.append(app_project("nowhere", sourceRepos=["*"],
                                    destinations=[{"server": "*", "namespace": "*"}]))  # fmt: skip
    repo.write("bootstrap/projects.yaml", "---\n".join(projects))
    repo.write("bootstrap/root.yaml", application("root", repo.url, "apps", dest=ARGOCD,
                                                  create_namespace=False))  # fmt: skip

    def app(name: str, path: str, *, project: str = "team-a", dest: str = "",
            url: str = repo.url, ns: str | None = None, create: bool = True,
            **source: Any) -> None:  # fmt: skip
        text = application(name, url, path, dest=dest or f"team-a-{name}",
                           create_namespace=create, **source)  # fmt: skip
        repo.write(f"apps/{name}.yaml", in_project(text, project, ns=ns))

    app("missing", "plain", project="nowhere", dest=ARGOCD, create=False)
    app("wrong-repo", ".", url=other_url, targetRevision="HEAD")
    app("wrong-dest", "plain", dest="prod")
    app("private", "plain", project="team-b", dest="team-a-private")
    app("secrets", "secrets")
    app("cluster", "cluster")
    app("good", "plain")
    app("elsewhere", "plain", ns="apps-x")
    app("windowed", "plain", project="windows", dest="windowed")
    app("stray", "stray")  # an object in a namespace of its own
    repo.write("plain/cm.yaml", _cm("plain"))
    repo.write("secrets/cm.yaml", _cm("before-the-secret"))
    repo.write("secrets/secret.yaml", _secret("team-a-password"))
    repo.write("cluster/role.yaml", CLUSTER_ROLE)
    repo.write("cluster/cm.yaml", _cm("beside-the-role"))
    repo.write(
        "stray/cm.yaml", _cm("stray").replace("name: stray", "name: stray\n  namespace: stray-x")
    )
    repo.write("stray/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: stray-x\n")
