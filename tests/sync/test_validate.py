"""Offline validation of a manifest tree: every problem, located by file, line and object."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from gitkrm.sync.validate import manifest_files, validate_paths
from tests.support.builders import crd

SAMPLE = Path(__file__).resolve().parents[2] / "sample-repo"

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: prod}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers: [{name: web, image: nginx}]
"""


def test_sample_repo_is_valid() -> None:
    report = validate_paths([SAMPLE])
    assert report.problems == []
    assert report.objects >= 10
    assert report.ok


def test_every_problem_is_reported_with_file_line_and_object(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok, namespace: prod}\n---\n"
        + DEPLOY % "other"
    )
    (tmp_path / "b.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    report = validate_paths([tmp_path])
    assert report.objects == 3
    assert [(p.path, p.line, p.object) for p in report.problems] == [
        (str(tmp_path / "a.yaml"), 5, "Deployment prod/web"),
        (str(tmp_path / "b.yaml"), 1, "Service default/s"),
    ]
    assert "`selector` does not match template `labels`" in report.problems[0].message
    assert "spec.ports" in report.problems[1].message
    assert str(report.problems[0]).startswith(f"{tmp_path / 'a.yaml'}:5: Deployment prod/web: ")


def test_a_broken_file_does_not_hide_the_others(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nkind: Secret\n")
    (tmp_path / "good.yaml").write_text(DEPLOY % "web")
    report = validate_paths([tmp_path])
    assert report.objects == 1
    assert len(report.problems) == 1
    assert report.problems[0].path.endswith("bad.yaml")
    assert report.problems[0].line == 3


def test_custom_resources_validate_against_a_crd_in_the_same_tree(tmp_path: Path) -> None:
    widget_crd = crd(spec={"size": {"type": "integer"}}, status_subresource=False)
    (tmp_path / "z-crd.yaml").write_text(yaml.safe_dump(widget_crd, sort_keys=False))
    (tmp_path / "a-widget.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: d}\n"
        "spec: {size: big}\n"
    )
    report = validate_paths([tmp_path])
    assert len(report.problems) == 1
    assert report.problems[0].object == "Widget d/w"
    assert "spec.size" in report.problems[0].message


def test_hidden_and_non_manifest_files_are_skipped_in_a_stable_order(tmp_path: Path) -> None:
    for rel in ["b/x.yaml", "a/y.yml", "a/z.json", ".git/config.yaml", "notes.md", "a/.h.yaml"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    assert [p.relative_to(tmp_path).as_posix() for p in manifest_files(tmp_path)] == [
        "a/y.yml",
        "a/z.json",
        "b/x.yaml",
    ]


def test_symlink_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
    root = tmp_path / "repo"
    root.mkdir()
    os.symlink(outside, root / "link.yaml")
    report = validate_paths([root])
    assert report.objects == 0
    assert len(report.problems) == 1
    assert "leaves the source root" in report.problems[0].message
    assert report.problems[0].path == str(root / "link.yaml")


def test_duplicates_and_dependency_cycles_are_problems_too(tmp_path: Path) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: d\n"
    (tmp_path / "a.yaml").write_text(cm)
    (tmp_path / "b.yaml").write_text(cm)
    report = validate_paths([tmp_path])
    assert [(p.path, p.line) for p in report.problems] == [(str(tmp_path / "b.yaml"), 1)]
    assert report.problems[0].message.endswith(f"is also defined at {tmp_path / 'a.yaml'}:1")


def test_kustomizations_are_validated_as_rendered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/lib/google-cloud-sdk/bin:/usr/bin:/bin")
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "kustomization.yaml").write_text("resources: [cm.yaml]\nnamespace: prod\n")
    (tmp_path / "k" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
    )
    report = validate_paths([tmp_path])
    assert report.problems == []
    assert report.objects == 1


def _mini_chart(directory: Path, name: str) -> None:
    """A chart of one ConfigMap template named after the release."""
    (directory / "templates").mkdir(parents=True)
    (directory / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
    (directory / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}-chart'}\n"
    )


def test_a_chart_inside_a_kustomization_directory_is_not_rendered_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Flux's rule: a kustomization directory is built and nothing else of it is read, so
    the `charts/` home of kustomize's helmCharts (or a vendored chart) is no release of
    its own; a chart outside every kustomization directory still is."""
    monkeypatch.setenv("PATH", "/usr/lib/google-cloud-sdk/bin:/usr/bin:/bin")
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (app / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n")
    _mini_chart(app / "charts" / "vendored", "vendored")
    _mini_chart(tmp_path / "standalone", "standalone")

    at_top = validate_paths([app])
    assert at_top.problems == []
    assert sorted(at_top.keys) == ["default_plain__ConfigMap"]

    below = validate_paths([tmp_path])
    assert below.problems == []
    assert sorted(below.keys) == ["default_plain__ConfigMap", "default_standalone-chart__ConfigMap"]


def test_an_object_kustomize_built_without_apiversion_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kustomize builds resources that have no apiVersion (kustomize's breakfast example);
    the problem names the object, not only the kustomization."""
    monkeypatch.setenv("PATH", "/usr/lib/google-cloud-sdk/bin:/usr/bin:/bin")
    (tmp_path / "kustomization.yaml").write_text("resources: [coffee.yaml]\n")
    (tmp_path / "coffee.yaml").write_text("kind: Coffee\nmetadata: {name: morningCup}\n")
    report = validate_paths([tmp_path])
    assert [(p.line, p.object, p.message) for p in report.problems] == [
        (None, "Coffee morningCup", "document has no apiVersion")
    ]
    assert report.problems[0].path == str(tmp_path / "kustomization.yaml")
