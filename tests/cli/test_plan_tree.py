"""`gitkrm plan --interpret flux` of a branch of a repository in Flux's layout: the child
sources its Kustomizations declare are planned too, at the planned commit."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from tests.cli.plan_repo import cli, plan_json
from tests.cli.test_plan_outputs import SCHEMA
from tests.e2e.argocd_apps import application
from tests.e2e.flux_repo import APP, fleet
from tests.e2e.manifests import configmap
from tests.source.source_gitrepo import RemoteRepo, git


@pytest.fixture
def _kustomize() -> None:
    from gitkrm.sync import kustomize

    kustomize.command()  # kubectl or kustomize must be on PATH


@pytest.mark.usefixtures("_kustomize")
def test_a_plan_of_a_flux_tree_plans_its_children(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = fleet(tmp_path)
    state = tmp_path / "st"
    flags = ["--repo", repo.url, "--path", "clusters/dev", "--interpret", "flux",
             "--state", str(state)]  # fmt: skip
    code, _, err = cli(capsys, "run", "--once", *flags)
    assert code == 0, err
    git("checkout", "-q", "-b", "feature", cwd=repo.work)
    repo.write("apps/dev/podinfo.yaml", APP.replace("greeting: hello", "greeting: hi"))
    git("commit", "-q", "-am", "greeting", cwd=repo.work)
    git("push", "-q", "origin", "HEAD:refs/heads/feature", cwd=repo.work)
    head = git("rev-parse", "HEAD", cwd=repo.work)

    code, doc, _ = plan_json(capsys, *flags, "--branch", "feature")
    assert code == 1
    jsonschema.validate(doc, SCHEMA)
    by_name = {s["source"]: s for s in doc["sources"]}
    parent = doc["sources"][0]
    assert parent["source"] == "default"
    assert parent["result"] == "nothing-to-do"  # the Kustomizations themselves are unchanged
    apps = next(s for n, s in by_name.items() if n.startswith("flux-system-apps-"))
    assert apps["parent"] == "default"
    assert apps["declaredBy"] == {"group": "kustomize.toolkit.fluxcd.io", "kind": "Kustomization",
                                  "name": "apps", "namespace": "flux-system"}  # fmt: skip
    assert apps["revision"] == head  # planned at the planned commit
    assert apps["result"] == "changes"
    [changed] = apps["objects"]
    assert (changed["action"], changed["name"]) == ("configure", "dev-podinfo-settings")
    assert "+  greeting: hi" in changed["diff"]
    infra = next(s for n, s in by_name.items() if n.startswith("flux-system-infrastructure-"))
    assert infra["result"] == "nothing-to-do"
    assert not any(n.startswith("flux-system-flux-system-") for n in by_name)  # the parent

    code, out, _ = cli(capsys, "plan", *flags, "--branch", "feature")
    assert code == 1
    assert (
        "declared by Kustomization.kustomize.toolkit.fluxcd.io flux-system/apps of source default"
        in out
    )


def test_a_plan_before_the_first_run_knows_the_peers_namespace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An app of apps planned on a new state: its Applications live in `argocd`, which the
    agent makes at its first run (as Argo CD's installation does); the plan creates them
    rather than failing on a namespace that does not exist yet. A child that can't be read
    says why in the plan."""
    repo = RemoteRepo(tmp_path / "repo")
    repo.write("bootstrap/root.yaml", application("root", repo.url, "apps", dest="apps"))
    repo.write("apps/cm.yaml", configmap("settings", {"a": "1"}, namespace="apps"))
    repo.commit("root")
    repo.push()
    flags = ["--repo", repo.url, "--path", "bootstrap", "--interpret", "argocd",
             "--state", str(tmp_path / "st")]  # fmt: skip
    code, doc, _ = plan_json(capsys, *flags)
    assert code == 1, doc
    [root] = doc["sources"][0]["objects"]
    assert (root["action"], root["kind"], root["namespace"]) == ("create", "Application", "argocd")
    assert not doc["sources"][0].get("errors")

    repo.write("bootstrap/gone.yaml", application("gone", repo.url, "missing", dest="gone"))
    repo.commit("gone")
    repo.push()
    code, doc, _ = plan_json(capsys, *flags)
    gone = next(s for s in doc["sources"] if s["source"].startswith("argocd-gone-"))
    assert gone["errors"] == [f"path 'missing' does not exist in revision {repo.head()[:12]}"]


def test_a_plan_names_the_chart_of_a_helmrelease_it_cannot_fetch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A monitoring layout's HelmRelease over a chart repository out of reach: its child's
    plan says which chart of which repository it is (it said `(directory)`) and why it
    could not be planned."""
    repo = RemoteRepo(tmp_path / "repo")
    repo.write("clusters/test/releases.yaml", """\
apiVersion: v1
kind: Namespace
metadata: {name: monitoring}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: grafana-charts, namespace: monitoring}
spec: {interval: 2h, url: "http://127.0.0.1:1/helm-charts"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: loki, namespace: monitoring}
spec:
  interval: 1h
  chart:
    spec:
      chart: loki
      version: 6.x
      sourceRef: {kind: HelmRepository, name: grafana-charts}
""")  # fmt: skip
    repo.commit("loki")
    repo.push()
    flags = ["--repo", repo.url, "--path", "clusters/test", "--interpret", "flux",
             "--state", str(tmp_path / "st")]  # fmt: skip
    code, out, _ = cli(capsys, "plan", *flags)
    assert code == 2, out
    line = next(x for x in out.splitlines() if x.startswith("source monitoring-loki-"))
    assert "(chart loki 6.x of http://127.0.0.1:1/helm-charts), declared by HelmRelease" in line
    assert "error: chart repository http://127.0.0.1:1/helm-charts: " in out
