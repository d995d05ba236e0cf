"""`gitkrm validate` as a user runs it: a real process, exit codes, stderr lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "sample-repo"


def gitkrm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitkrm.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_valid_tree_exits_0() -> None:
    res = gitkrm("validate", str(SAMPLE))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith(": valid")
    assert res.stderr == ""


def test_invalid_tree_exits_1_with_one_line_per_problem(tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name, namespace: d}\n"
    )
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: [unclosed\n")
    res = gitkrm("validate", str(tmp_path))
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{tmp_path / 'broken.yaml'}:")
    assert lines[1].startswith(f"{tmp_path / 'cm.yaml'}:1: ConfigMap d/Bad_Name: ")
    assert "Traceback" not in res.stderr


def test_missing_path_is_a_usage_error() -> None:
    res = gitkrm("validate", "/nonexistent/manifests")
    assert res.returncode == 2
    assert res.stderr.strip() == "gitkrm: error: /nonexistent/manifests: no such file or directory"


def test_the_default_namespace_is_runs_and_the_store_crds_count(tmp_path: Path) -> None:
    import yaml

    from tests.support.builders import crd, custom_resource

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    res = gitkrm("validate", str(tree))  # `default`, as run
    assert res.returncode == 0, res.stderr
    bad = gitkrm("validate", str(tree), "--namespace", "Not_A_Namespace")
    assert bad.returncode == 2
    assert "--namespace 'Not_A_Namespace' is not a valid name" in bad.stderr
    # A custom resource whose CRD only the store knows: valid with --state, as run.
    crds = tmp_path / "crds"
    crds.mkdir()
    (crds / "crd.yaml").write_text(yaml.safe_dump(crd("Widget", "example.com")))
    state = tmp_path / "state"
    synced = gitkrm("run", "--once", "--repo", str(crds), "--state", str(state))
    assert synced.returncode == 0, synced.stderr
    (tree / "w.yaml").write_text(yaml.safe_dump(custom_resource("Widget", "w", None)))
    unknown = gitkrm("validate", str(tree))
    assert unknown.returncode == 1
    assert 'unknown kind "Widget"' in unknown.stderr
    known = gitkrm("validate", str(tree), "--state", str(state))
    assert known.returncode == 0, known.stderr
    missing = gitkrm("validate", str(tree), "--state", str(tmp_path / "nowhere"))
    assert missing.returncode == 2
    assert "no store.db there" in missing.stderr


def test_a_charts_rendered_templates_are_counted_as_files() -> None:
    # The corpus chart renders a Deployment, a Service and an HPA from three templates; its
    # disabled Ingress, its ServiceMonitor (no such CRD) and its test hook render nothing.
    chart = Path(__file__).resolve().parents[1] / "corpus/podinfo-lookalike/charts/pagecard"
    res = gitkrm("validate", str(chart))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "3 object(s) in 3 file(s): valid"


def test_a_version_the_crd_does_not_serve_names_the_versions_it_does(tmp_path: Path) -> None:
    # An Istio-on-Flux layout written before Flux 2.3: HelmRepository v1beta1 and
    # HelmRelease v2beta1, which Flux (and gitkrm's stand-in CRDs) no longer serve.
    (tmp_path / "istio.yaml").write_text(
        "apiVersion: source.toolkit.fluxcd.io/v1beta1\nkind: HelmRepository\n"
        "metadata: {name: istio, namespace: istio-system}\n"
        "spec: {interval: 1h, url: 'https://charts.example.org'}\n---\n"
        "apiVersion: helm.toolkit.fluxcd.io/v2beta1\nkind: HelmRelease\n"
        "metadata: {name: istiod, namespace: istio-system}\n"
        "spec: {interval: 1h, chart: {spec: {chart: istiod, sourceRef: "
        "{kind: HelmRepository, name: istio}}}}\n---\n"
        "apiVersion: example.org/v1\nkind: Widget\nmetadata: {name: w, namespace: d}\n"
    )
    res = gitkrm("validate", "--interpret", "flux", str(tmp_path))
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[0].endswith(
        ':1: HelmRepository istio-system/istio: unknown kind "HelmRepository" in version '
        '"source.toolkit.fluxcd.io/v1beta1": its CustomResourceDefinition serves v1, v1beta2, '
        "not this version"
    ), lines
    assert "HelmRelease istio-system/istiod" in lines[1]
    assert "serves v2, v2beta2, not this version" in lines[1]
    assert lines[2].endswith(
        "no CustomResourceDefinition for it (group example.org) in this revision or in the store"
    ), lines


def test_an_unknown_kind_says_which_flag_knows_it_or_that_kubernetes_removed_its_version(
    tmp_path: Path,
) -> None:
    # A Flux repository validated without --interpret flux; Flux v1's get-started layout
    # with an HPA at autoscaling/v2beta1, a version Kubernetes no longer serves; an Argo
    # Rollout, which --interpret argocd does not register.
    (tmp_path / "objects.yaml").write_text(
        "apiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Alert\n"
        "metadata: {name: a, namespace: flux-system}\nspec: {providerRef: {name: p}}\n---\n"
        "apiVersion: autoscaling/v2beta1\nkind: HorizontalPodAutoscaler\n"
        "metadata: {name: h, namespace: d}\nspec: {maxReplicas: 2}\n---\n"
        "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r, namespace: d}\n"
    )
    res = gitkrm("validate", str(tmp_path))
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[0].endswith(
        "in this revision or in the store (a kind of Flux's: --interpret flux registers it)"
    ), lines
    assert lines[1].endswith(
        '"autoscaling/v2beta1": the API serves it in v2, v1, not this version'
    ), lines
    assert lines[2].endswith("(group argoproj.io) in this revision or in the store"), lines
    assert gitkrm("validate", "--interpret", "flux", str(tmp_path)).stderr.count("\n") == 2
