"""Sources from --config files of GitSource objects, and back (`gitkrm.agent.config_read`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.agent.config import SourceConfig
from gitkrm.agent.config_read import from_object, load_config_file
from gitkrm.errors import BadRequest, ManifestError
from gitkrm.source import GitRef, HttpsAuth, RefKind, SshAuth
from gitkrm.sync.options import AdoptionPolicy, IgnoreDifference

CONFIG = """\
apiVersion: gitkrm.io/v1alpha1
kind: GitSource
metadata:
  name: apps
spec:
  url: https://git.example.com/apps.git
  ref: {tag: v1.2.0}
  path: clusters/prod
  interval: 1m30s
  defaultNamespace: prod
  prune: false
  adoption: if-unowned
  suspend: true
  ignoreDifferences:
  - group: apps
    kind: Deployment
    jsonPointers: [/spec/replicas]
  auth:
    username: bot
    passwordFile: secrets/token
  caFile: ca.pem
  verify: {keyring: keys/trusted.asc}
---
apiVersion: gitkrm.io/v1alpha1
kind: GitSource
metadata:
  name: infra
  namespace: gitkrm-system
spec:
  url: ssh://git@git.example.com/infra.git
  auth: {sshKeyFile: /keys/id, knownHostsFile: known_hosts}
"""


def test_config_file_round_trips_through_the_object(tmp_path: Path) -> None:
    f = tmp_path / "sources.yaml"
    f.write_text(CONFIG)
    apps, infra = load_config_file(f, default_interval=10.0)
    assert apps.name == "apps"
    assert apps.ref == GitRef(RefKind.TAG, "v1.2.0")
    assert apps.path == "clusters/prod"
    assert apps.interval == 90.0
    assert apps.default_namespace == "prod"
    assert apps.prune is False
    assert apps.adoption is AdoptionPolicy.IF_UNOWNED
    assert apps.suspend is True
    assert apps.ignore_differences == (
        IgnoreDifference(group="apps", kind="Deployment", json_pointers=("/spec/replicas",)),
    )
    assert isinstance(apps.auth, HttpsAuth)
    assert apps.auth.password.file == tmp_path / "secrets" / "token"
    assert apps.ca_file == tmp_path / "ca.pem"
    assert apps.verify is not None
    assert apps.verify.keyring == tmp_path / "keys" / "trusted.asc"
    assert infra.interval == 10.0  # the --interval default
    assert infra.ref == GitRef(RefKind.BRANCH, "main")
    assert isinstance(infra.auth, SshAuth)
    assert infra.auth.known_hosts == tmp_path / "known_hosts"
    for c in (apps, infra):
        assert from_object(c.to_object(agent_name="edge-1"), base=Path("/")) == c


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no GitSource objects"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "expected gitkrm.io/v1alpha1"),
        (
            "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: x}\n"
            "spec: {url: u, intervall: 1m}\n",
            r':1: GitSource x: .*unknown field "spec.intervall"',
        ),
        (
            "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: x}\n"
            "spec: {url: u, interval: soon}\n",
            "spec.interval",
        ),
        (
            "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: x}\n"
            "spec: {url: u, ref: {branch: a, tag: b}}\n",
            "at most 1",
        ),
        (
            "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: X}\n"
            "spec: {url: u}\n",
            "GitSource X",
        ),
        (
            "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: x, namespace: a}\n"
            "spec: {url: u}\n",
            "namespace must be gitkrm-system",
        ),
        (
            "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: x}\n"
            "spec: {url: u, auth: {passwordFile: a, passwordEnv: B}}\n",
            "exactly one of passwordFile and passwordEnv",
        ),
        (
            "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: x}\n"
            "spec: {url: u, ignoreDifferences: [{kind: Deployment, jsonPointers: [spec]}]}\n",
            "not a JSON pointer",
        ),
        (
            "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: x}\n"
            "spec: {url: u}\n---\n"
            "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: x}\n"
            "spec: {url: v}\n",
            r":6: GitSource x is defined twice \(first at line 1\)",
        ),
        (
            "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: x}\n"
            "spec: {url: u, healthCheckExprs: [{apiVersion: a/v1, kind: K, current: 'x =='}]}\n",
            r"spec.healthCheckExprs\[0\].current \(K\)",
        ),
        ("a: [\n", "sources.yaml:"),
    ],
)
def test_config_errors_name_file_line_and_object(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "sources.yaml"
    f.write_text(text)
    with pytest.raises(BadRequest, match=message) as info:
        load_config_file(f)
    assert str(f) in info.value.message


def test_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(BadRequest, match="does not exist"):
        load_config_file(tmp_path / "nope.yaml")


def test_directory_in_a_config_file(tmp_path: Path) -> None:
    (tmp_path / "manifests").mkdir()
    f = tmp_path / "sources.yaml"
    f.write_text(
        "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: dev}\n"
        "spec: {url: manifests}\n"
    )
    (dev,) = load_config_file(f)
    assert dev.is_directory
    assert dev.url == str(tmp_path / "manifests")
    f.write_text(
        "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: dev}\n"
        "spec: {url: manifests, ref: {branch: main}}\n"
    )
    with pytest.raises(ManifestError, match="plain directory"):
        load_config_file(f)


def test_health_check_exprs_round_trip(tmp_path: Path) -> None:
    f = tmp_path / "sources.yaml"
    f.write_text(
        "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: x}\n"
        "spec:\n  url: u\n  healthCheckExprs:\n"
        "  - {apiVersion: db.example.com/v1, kind: Database, current: \"status.phase == 'Up'\","
        " failed: \"status.phase == 'Down'\"}\n"
    )
    (config,) = load_config_file(f)
    assert config.health_checks is not None
    spec = config.to_object(agent_name="a")["spec"]
    assert spec["healthCheckExprs"] == [
        {"apiVersion": "db.example.com/v1", "kind": "Database",
         "current": "status.phase == 'Up'", "failed": "status.phase == 'Down'"}
    ]  # fmt: skip


def test_a_chart_release_round_trips_through_the_gitsource_object(tmp_path: Path) -> None:
    """What the tree writes for a HelmRelease's or a Helm Application's child is a valid
    GitSource (the CRD's schema) and reads back as the same source."""
    from gitkrm.charts.spec import ChartRef, CrdPolicy, HelmSpec

    helm = HelmSpec(
        release_name="web", namespace="shop", upgrade_crds=CrdPolicy.SKIP, create_namespace=True,
        template_mode=True, set_string=(("port", "80"),), file_parameters=(("c", "f.conf"),),
        ignore_missing_value_files=True,
    )  # fmt: skip
    config = SourceConfig(
        name="web",
        url="oci://registry.example.com/charts",
        ref=None,
        chart=ChartRef(repository="oci://registry.example.com/charts", name="web", version="^1"),
        helm=helm,
    )
    back = from_object(config.to_object(agent_name="a"), base=tmp_path)
    assert (back.chart, back.helm, back.ref, back.url) == (config.chart, helm, None, config.url)
