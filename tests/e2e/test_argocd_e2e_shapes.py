"""Shapes found in Argo CD's own end-to-end test data (written here by hand, alike in
shape), synced as Argo CD syncs them, through the real CLI on a real bare repository."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.e2e.argocd_apps import application, write_bootstrap
from tests.e2e.e2e_support import object_ref, read_each, read_objects, run_bootstrap
from tests.source.source_gitrepo import RemoteRepo

LONG_APP = "helm-with-several-dependencies-and-a-permission-that-is-denied"  # 62 characters


def _cm(name: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata: {{a: '1'}}\n"


def test_a_long_application_name_under_a_long_agent_name_syncs_and_prunes(
    tmp_path: Path,
) -> None:
    # The child source is named after the Application (up to 63 characters); with the
    # agent's name its inventory id is longer than a label value may be.
    repo = RemoteRepo(tmp_path / "git")
    write_bootstrap(repo)
    repo.write("apps/long.yaml", application(LONG_APP, repo.url, "long", dest="long-ns"))
    repo.write("long/cm.yaml", _cm("long-cm"))
    repo.write("apps/short.yaml", application("short", repo.url, "short", dest="short-ns"))
    repo.write("short/cm.yaml", _cm("short-cm"))
    repo.commit("an Application with a long name")
    repo.push()
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
    repo = RemoteRepo(tmp_path / "git")
    write_bootstrap(repo)
    repo.write("apps/chart.yaml", application(LONG_APP, repo.url, "chart", dest="chart-ns"))
    repo.write("chart/Chart.yaml", CHART)
    repo.write("chart/templates/cm.yaml", CHART_CM)
    bad_ns = "n" * 64
    repo.write("apps/bad-ns.yaml", application("bad-ns", repo.url, "short", dest=bad_ns))
    helm = {"releaseName": "r" * 260}  # past the GitSource's own bound: refused on writing it
    repo.write("apps/rel.yaml", application("rel", repo.url, "chart", dest="rel", helm=helm))
    repo.write("apps/fine.yaml", application("fine", repo.url, "short", dest="fine-ns"))
    repo.write("short/cm.yaml", _cm("short-cm"))
    repo.commit("three Applications, two of them wrong")
    repo.push()
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
