"""Shapes found in Argo CD's own end-to-end test data (written here by hand, alike in
shape), synced as Argo CD syncs them, through the real CLI on a real bare repository."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gitkrm.agent.tree.naming import child_name
from gitkrm.krm import ObjectRef
from tests.e2e.argocd_apps import application, write_bootstrap
from tests.e2e.e2e_support import (
    gitsource_status,
    object_ref,
    read_each,
    read_objects,
    reading,
    run_bootstrap,
)
from tests.source.source_gitrepo import RemoteRepo

LONG_APP = "helm-with-several-dependencies-and-a-permission-that-is-denied"  # 62 characters


def _cm(name: str, value: str = "1", *, namespace: str | None = None) -> str:
    where = f", namespace: {namespace}" if namespace else ""
    md = f"{{name: {name}{where}}}"
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {md}\ndata: {{a: '{value}'}}\n"


def _published(tmp_path: Path, files: dict[str, str]) -> RemoteRepo:
    """A bare repository: the bootstrap (root over `apps/`) and `files`, pushed."""
    repo = RemoteRepo(tmp_path / "git")
    write_bootstrap(repo)
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("the layout")
    repo.push()
    return repo


def test_a_long_application_name_under_a_long_agent_name_syncs_and_prunes(
    tmp_path: Path,
) -> None:
    # The child source is named after the Application (up to 63 characters); with the
    # agent's name its inventory id is longer than a label value may be.
    url = str(tmp_path / "git" / "remote.git")
    repo = _published(tmp_path, {
        "apps/long.yaml": application(LONG_APP, url, "long", dest="long-ns"),
        "long/cm.yaml": _cm("long-cm"),
        "apps/short.yaml": application("short", url, "short", dest="short-ns"),
        "short/cm.yaml": _cm("short-cm"),
    })  # fmt: skip
    assert repo.url == url
    state = tmp_path / "state"
    agent = ("--agent-name", "gitkrm-agent-7d9f8c6b5d-x2x9k")
    done = run_bootstrap(repo.url, state, *agent, "--wait", "--timeout", "2m")
    assert done.returncode == 0, done.stdout + done.stderr
    cm_ref = object_ref("ConfigMap", "long-cm", "long-ns")
    assert read_objects(state, cm_ref)[0]["data"] == {"a": "1"}
    # gone from Git: its finalizer prunes what it applied, found by that inventory id
    repo.remove("apps/long.yaml")
    repo.commit("the Application goes")
    repo.push()
    done = run_bootstrap(repo.url, state, *agent, "--wait", "--timeout", "2m")
    assert done.returncode == 0, done.stdout + done.stderr
    assert asyncio.run(read_each(state, cm_ref)) == [None]


CHART = "apiVersion: v2\nname: long\nversion: 0.1.0\n"
CHART_CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{ .Release.Name }}'\n"


def test_what_one_application_gets_wrong_fails_that_application_only(tmp_path: Path) -> None:
    # A chart under an Application whose name is longer than a Helm release name may be
    # (Argo CD's render fails the same way), and a destination namespace no namespace may
    # have, or a GitSource refuses: each an error naming its Application, and the sibling
    # syncs.
    url = str(tmp_path / "git" / "remote.git")
    bad_ns = "n" * 64
    helm = {"releaseName": "r" * 260}  # past the GitSource's own bound: refused on writing it
    repo = _published(tmp_path, {
        "apps/chart.yaml": application(LONG_APP, url, "chart", dest="chart-ns"),
        "chart/Chart.yaml": CHART,
        "chart/templates/cm.yaml": CHART_CM,
        "apps/bad-ns.yaml": application("bad-ns", url, "short", dest=bad_ns),
        "apps/rel.yaml": application("rel", url, "chart", dest="rel", helm=helm),
        "apps/fine.yaml": application("fine", url, "short", dest="fine-ns"),
        "short/cm.yaml": _cm("short-cm"),
    })  # fmt: skip
    state = tmp_path / "state"
    done = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert f"Chart.yaml: release name '{LONG_APP}' is longer than 53 characters" in out
    bad_ns_errors = [line for line in out.splitlines() if "Application argocd/bad-ns: " in line]
    assert bad_ns_errors, out
    assert bad_ns in bad_ns_errors[0]
    assert len([line for line in bad_ns_errors if " ERROR " in line]) == 1, "\n".join(bad_ns_errors)
    rel_errors = [line for line in out.splitlines() if "ERROR source argocd-root" in line
                  and "Application argocd/rel: " in line]  # fmt: skip
    assert len(rel_errors) == 1, out
    assert "releaseName" in rel_errors[0]
    assert "Traceback" not in out
    assert "gitkrm: error" not in out
    assert read_objects(state, object_ref("ConfigMap", "short-cm", "fine-ns"))


CLUSTER_ROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader, namespace: somewhere}
rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]
"""
BINDING_HOOK = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: reader-binding
  namespace: cert-manager
  annotations: {argocd.argoproj.io/hook: PreSync}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
"""


def test_a_cluster_scoped_objects_namespace_is_dropped_and_a_repeated_object_kept_once(
    tmp_path: Path,
) -> None:
    # As Argo CD's controller normalises the target objects: a namespace on a cluster-scoped
    # object (a hook too) is dropped, and of an object rendered twice the last is kept,
    # with a warning naming both places.
    url = str(tmp_path / "git" / "remote.git")
    repo = _published(tmp_path, {
        "apps/shapes.yaml": application("shapes", url, "shapes", dest="shapes"),
        "shapes/a-role.yaml": CLUSTER_ROLE,
        "shapes/b-hook.yaml": BINDING_HOOK,
        "shapes/c-first.yaml": _cm("twice", "first"),
        "shapes/d-again.yaml": _cm("twice", "again"),
    })  # fmt: skip
    state = tmp_path / "state"
    done = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert done.returncode == 0, done.stdout + done.stderr
    rbac = "rbac.authorization.k8s.io"
    role, binding, twice = read_objects(
        state,
        object_ref("ClusterRole", "reader", None, rbac),
        object_ref("ClusterRoleBinding", "reader-binding", None, rbac),
        object_ref("ConfigMap", "twice", "shapes"),
    )
    assert "namespace" not in role["metadata"]
    assert "namespace" not in binding["metadata"]
    assert twice["data"] == {"a": "again"}
    child = child_name(ObjectRef(group="argoproj.io", kind="Application", namespace="argocd",
                                 name="shapes"))  # fmt: skip

    async def warnings() -> list[str]:
        async with reading(state) as store:
            return list((await gitsource_status(store, child)).get("warnings") or ())

    assert asyncio.run(warnings()) == [
        "c-first.yaml:1: ConfigMap shapes/twice: appears again at d-again.yaml:1, which is "
        "kept (Argo CD's RepeatedResourceWarning)"
    ]


VALUES_CHART = "apiVersion: v2\nname: web\nversion: 0.1.0\n"
VALUES_CM = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: web-values}
data:
  env: {{ .Values.env | quote }}
  common: {{ .Values.common | quote }}
  extra: {{ .Values.extra | quote }}
  motd: {{ .Values.motd | quote }}
"""


def test_value_files_outside_the_chart_are_read_from_the_repository(tmp_path: Path) -> None:
    # eks-blueprints-add-ons' shape: a chart in Git whose value files are `../..` paths,
    # `/` paths (from the repository's top) and `$values/...` with no `values` ref (Argo
    # CD substitutes `$values` away: the repository's top), missing ones ignored; and
    # CreateNamespace=true with no destination namespace (nothing to create, as Argo CD).
    url = str(tmp_path / "git" / "remote.git")
    helm = {
        "ignoreMissingValueFiles": True,
        "valueFiles": ["../../envs/dev/values.yaml", "/envs/common.yaml",
                       "$values/envs/extra.yaml", "$values/clusters/none/values.yaml"],
        "fileParameters": [{"name": "motd", "path": "../../envs/motd.txt"}],
    }  # fmt: skip
    app = application("web", url, "charts/web", dest="web", helm=helm)
    no_ns = application("no-ns", url, "plain", dest="", create_namespace=True)
    repo = _published(tmp_path, {
        "apps/web.yaml": app,
        "apps/no-ns.yaml": no_ns,
        "plain/cm.yaml": _cm("plain-cm", namespace="default"),
        "charts/web/Chart.yaml": VALUES_CHART,
        "charts/web/values.yaml": "env: none\ncommon: none\nextra: none\nmotd: none\n",
        "charts/web/templates/cm.yaml": VALUES_CM,
        "envs/dev/values.yaml": "env: dev\n",
        "envs/common.yaml": "common: shared\n",
        "envs/extra.yaml": "extra: from-top\n",
        "envs/motd.txt": "hello",
    })  # fmt: skip
    state = tmp_path / "state"
    done = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert done.returncode == 0, done.stdout + done.stderr
    web_ref = object_ref("ConfigMap", "web-values", "web")
    assert read_objects(state, web_ref)[0]["data"] == {
        "env": "dev", "common": "shared", "extra": "from-top", "motd": "hello"
    }  # fmt: skip
    assert read_objects(state, object_ref("ConfigMap", "plain-cm", "default"))
    # a value file outside the chart is part of what the render depends on
    repo.write("envs/dev/values.yaml", "env: dev-2\n")
    repo.commit("dev values change")
    repo.push()
    done = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert done.returncode == 0, done.stdout + done.stderr
    assert read_objects(state, web_ref)[0]["data"]["env"] == "dev-2"
