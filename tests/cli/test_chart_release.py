"""A chart release source through the CLI: a GitSource with `spec.chart` is one release of a
chart from the loopback HTTP chart repository or OCI registry, version picked by a range."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitkrm.cli.main import main
from tests.charts.release_charts import CACHE, WEBAPP, push
from tests.cli.cli_store import stored
from tests.support.chartrepo import ChartRepo, chart_repo
from tests.support.registry import Registry, oci_registry

__all__ = ["chart_repo", "oci_registry"]  # fixtures


def config(path: Path, url: str, chart: str, version: str, helm: str = "") -> Path:
    path.write_text(
        "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: rel}\n"
        f"spec:\n  url: {url}\n  chart: {{name: {chart}, version: '{version}'}}\n{helm}"
    )
    return path


def run_once(capsys: pytest.CaptureFixture[str], cfg: Path, state: Path) -> tuple[int, str]:
    code = main(["run", "--config", str(cfg), "--once", "--state", str(state)])
    return code, capsys.readouterr().err


HELM = """\
  helm:
    releaseName: shop
    namespace: shop
    createNamespace: true
    installCRDs: Create
    upgradeCRDs: Skip
    values: {message: from-config, replicas: 2}
"""


def test_a_range_picks_the_newest_release_and_follows_the_repository(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, chart_repo: ChartRepo
) -> None:
    for v in ("1.0.0", "1.1.0", "2.0.0"):
        chart_repo.publish(WEBAPP, v)
    cfg = config(tmp_path / "c.yaml", chart_repo.url, "webapp", "^1.0", HELM)
    state = tmp_path / "state"
    code, err = run_once(capsys, cfg, state)
    assert code == 0, err
    cm = stored(state, "ConfigMap", "shop-config", "shop")
    assert cm is not None
    assert cm["data"] == {"message": "from-config", "chartVersion": "1.1.0", "installing": "true"}
    deploy: Any = stored(state, "Deployment", "shop", "shop", "apps")
    assert deploy["spec"]["replicas"] == 2
    ns: Any = stored(state, "Namespace", "shop", None)
    assert ns["metadata"]["annotations"]["gitkrm.io/prune"] == "disabled"  # createNamespace
    crd: Any = stored(state, "CustomResourceDefinition", "gadgets.webapp.example.com", None,
                   "apiextensions.k8s.io")  # fmt: skip
    assert crd["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/ssa"] == "IfNotPresent"
    hook = stored(state, "ConfigMap", "shop-migrated", "shop")  # pre-install ran
    assert hook is not None
    assert hook["data"]["version"] == "1.1.0"

    chart_repo.publish(WEBAPP, "1.2.0")  # the range follows the repository: an upgrade
    code, err = run_once(capsys, cfg, state)
    assert code == 0, err
    cm = stored(state, "ConfigMap", "shop-config", "shop")
    assert cm is not None
    assert cm["data"]["chartVersion"] == "1.2.0"
    assert cm["data"]["installing"] == "false"
    hook = stored(state, "ConfigMap", "shop-migrated", "shop")  # pre-upgrade ran
    assert hook is not None
    assert hook["data"]["version"] == "1.2.0"
    # upgradeCRDs: Skip: the CRD is left as it is, not pruned
    assert stored(state, "CustomResourceDefinition", "gadgets.webapp.example.com", None,
               "apiextensions.k8s.io") is not None  # fmt: skip


def test_a_chart_from_an_oci_registry(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, oci_registry: Registry
) -> None:
    for v in ("0.1.0", "0.2.0"):
        push(CACHE, v, f"{oci_registry.url}/release-charts", tmp_path / "pkg")
    helm = "  defaultNamespace: infra\n  helm: {createNamespace: true, values: {size: 1Gi}}\n"
    cfg = config(tmp_path / "c.yaml", f"{oci_registry.url}/release-charts", "cache", "<1", helm)
    state = tmp_path / "state"
    code, err = run_once(capsys, cfg, state)
    assert code == 0, err
    svc: Any = stored(state, "Service", "cache", "infra")  # the release is named after the chart
    assert svc["metadata"]["annotations"]["size"] == "1Gi"


def test_no_matching_version_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, chart_repo: ChartRepo
) -> None:
    chart_repo.publish(WEBAPP, "1.0.0")
    cfg = config(tmp_path / "c.yaml", chart_repo.url, "webapp", ">=3")
    code, err = run_once(capsys, cfg, tmp_path / "state")
    assert code == 1
    assert "no version in" in err
    assert "matches '>=3'" in err
    assert "1.0.0" in err


def test_a_chart_source_takes_no_git_fields(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cfg = config(tmp_path / "c.yaml", "https://charts.example.com", "x", "*", "  path: sub\n")
    code, err = run_once(capsys, cfg, tmp_path / "state")
    assert code == 2
    assert "spec.chart takes no ref, path, auth or verify" in err
