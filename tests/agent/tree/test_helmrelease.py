"""Flux's HelmRelease read into a chart-release child source: the chart's origin, values in
helm-controller's order (secret values masked), names, CRD policies, post-renderers, drift
rules, and every field gitkrm does not honour reported."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.agent.config import SourceConfig
from gitkrm.agent.tree.helmrelease import INTERPRETER, release_name
from gitkrm.agent.tree.model import Peer
from gitkrm.charts.spec import ChartRef, CrdPolicy
from gitkrm.errors import ManifestError
from gitkrm.krm import GroupKind, ObjectRef, masking
from gitkrm.source import GitRef, RefKind
from gitkrm.sync.options import IgnoreDifference
from gitkrm.sync.overlay_spec import ImageOverride, OverlayPatch

from .flux_objects import Objects, git_repository, secret
from .helmrelease_objects import config_map, helm_release, helm_repository, oci_repository

URL = "https://github.com/example/fleet"
PATCH = "- op: add\n  path: /metadata/labels/x\n  value: y\n"
CHARTS = "https://charts.example.com"


def parent() -> SourceConfig:
    return SourceConfig(name="default", url=URL, path="clusters/dev")


def ctx(*objs: dict[str, Any]) -> Objects:
    return Objects(parent(), helm_repository(CHARTS), *objs)


async def test_the_interpreter_declares_helmreleases_for_flux() -> None:
    assert INTERPRETER.peer is Peer.FLUX
    assert GroupKind(group="helm.toolkit.fluxcd.io", kind="HelmRelease") in INTERPRETER.kinds
    kinds = {c["spec"]["names"]["kind"] for c in INTERPRETER.crds()}
    assert kinds == {"HelmRelease", "HelmRepository", "OCIRepository"}


async def test_a_helmrepository_chart_is_a_chart_release_with_flux_defaults() -> None:
    spec = await INTERPRETER.child(helm_release(), ctx())
    c = spec.config
    assert c.chart == ChartRef(repository=CHARTS, name="podinfo", version="^6")
    assert (c.url, c.ref) == (CHARTS, None)
    assert c.helm is not None
    assert (c.helm.release_name, c.helm.namespace, c.default_namespace) == (
        "podinfo",
        "apps",
        "apps",
    )
    assert (c.helm.install_crds, c.helm.upgrade_crds) == (CrdPolicy.CREATE, CrdPolicy.SKIP)
    assert not c.helm.create_namespace
    assert c.interval == 600
    assert spec.wait
    assert spec.finalizer == "finalizers.fluxcd.io"
    assert not spec.unhonoured


async def test_an_oci_helmrepository_and_an_ocirepository_chart_ref() -> None:
    oci = helm_repository("oci://ghcr.io/example/charts", name="oci", type="oci")
    hr = helm_release(
        chart={
            "spec": {
                "chart": "redis",
                "sourceRef": {"kind": "HelmRepository", "name": "oci", "namespace": "flux-system"},
            }
        }
    )
    c = (await INTERPRETER.child(hr, ctx(oci))).config
    assert c.chart == ChartRef(repository="oci://ghcr.io/example/charts", name="redis", version="*")
    repo = oci_repository("oci://ghcr.io/example/charts/podinfo", ref={"semver": ">=6.5"})
    hr = helm_release(chart=None, chartRef={"kind": "OCIRepository", "name": "podinfo"})
    c = (await INTERPRETER.child(hr, ctx(repo))).config
    assert c.chart == ChartRef(
        repository="oci://ghcr.io/example/charts", name="podinfo", version=">=6.5"
    )


@pytest.mark.parametrize(
    ("media_type", "reported"),
    [
        # Flux's documented form for a chart (d2-infra's OCIRepositories): honoured
        ("application/vnd.cncf.helm.chart.content.v1.tar+gzip", False),
        ("application/vnd.cncf.flux.content.v1.tar+gzip", True),
    ],
)
async def test_an_ocirepository_selecting_the_helm_chart_layer_is_honoured(
    media_type: str, reported: bool
) -> None:
    selector = {"mediaType": media_type, "operation": "copy"}
    repo = oci_repository("oci://ghcr.io/example/charts/podinfo", layerSelector=selector)
    hr = helm_release(chart=None, chartRef={"kind": "OCIRepository", "name": "podinfo"})
    spec = await INTERPRETER.child(hr, ctx(repo))
    fields = [u.field for u in spec.unhonoured]
    assert fields == (["OCIRepository apps/podinfo spec.layerSelector"] if reported else [])


async def test_a_chart_in_the_parents_git_repository() -> None:
    hr = helm_release(
        chart={
            "spec": {
                "chart": "./charts/web/",
                "sourceRef": {
                    "kind": "GitRepository",
                    "name": "flux-system",
                    "namespace": "flux-system",
                },
            }
        }
    )
    c = (await INTERPRETER.child(hr, ctx(git_repository(URL)))).config
    assert c.chart is None
    assert (c.url, c.ref, c.path) == (URL, GitRef(RefKind.BRANCH, "main"), "charts/web")


async def test_values_from_configmaps_and_secrets_in_order_then_inline_values() -> None:
    hr = helm_release(
        valuesFrom=[
            {"kind": "ConfigMap", "name": "base"},
            {"kind": "Secret", "name": "db", "valuesKey": "creds.yaml"},
            {"kind": "Secret", "name": "db", "valuesKey": "token", "targetPath": "auth.token"},
            {"kind": "ConfigMap", "name": "absent", "optional": True},
            {"kind": "Secret", "name": "db", "valuesKey": "nope", "optional": True},
        ],
        values={"replicas": 3, "db": {"host": "inline"}},
    )
    objs = (
        config_map("base", **{"values.yaml": "replicas: 1\ndb: {host: a, port: 5432}\n"}),
        secret(
            "db",
            namespace="apps",
            **{"creds.yaml": "db: {password: hunter2-secret}\n", "token": "tok-12345"},
        ),
    )
    c = (await INTERPRETER.child(hr, ctx(*objs))).config
    assert c.helm is not None
    assert c.helm.values == {
        "replicas": 3,
        "db": {"host": "inline", "port": 5432, "password": "hunter2-secret"},
        "auth": {"token": "tok-12345"},
    }
    assert masking.mask("pw hunter2-secret tok-12345") == "pw *** ***"
    shown = c.to_object(agent_name="a")["spec"]["helm"]["values"]
    assert shown["db"]["password"] == "***"  # the GitSource object never holds it


async def test_a_missing_values_source_is_an_error_naming_the_field() -> None:
    hr = helm_release(valuesFrom=[{"kind": "Secret", "name": "gone"}])
    with pytest.raises(ManifestError, match=r"spec.valuesFrom\[0\]: Secret apps/gone not found"):
        await INTERPRETER.child(hr, ctx())


def test_release_names_are_fluxs() -> None:
    assert release_name("podinfo", {}) == "podinfo"
    assert release_name("podinfo", {"targetNamespace": "web"}) == "web-podinfo"
    assert release_name("podinfo", {"releaseName": "x", "targetNamespace": "web"}) == "x"
    long = release_name("a" * 40, {"targetNamespace": "b" * 20})
    assert len(long) == 53
    assert long.startswith("b" * 20 + "-" + "a" * 19 + "-")


async def test_install_upgrade_post_renderers_drift_and_dependencies() -> None:
    hr = helm_release(
        targetNamespace="web",
        install={"crds": "CreateReplace", "createNamespace": True, "remediation": {"retries": 3}},
        upgrade={"crds": "Create"},
        dependsOn=[{"name": "redis"}, {"name": "cert-manager", "namespace": "infra"}],
        postRenderers=[{"kustomize": {
            "patches": [{"target": {"kind": "Deployment"}, "patch": PATCH}],
            "images": [{"name": "nginx", "newTag": "1.27"}],
        }}],
        driftDetection={"mode": "warn", "ignore": [
            {"paths": ["/spec/replicas"], "target": {"kind": "Deployment"}},
            {"paths": ["/metadata/labels"]},
        ]},
        storageNamespace="flux-system", test={"enable": True}, timeout="3m", suspend=True,
    )  # fmt: skip
    spec = await INTERPRETER.child(hr, ctx())
    c = spec.config
    assert c.helm is not None
    assert (c.helm.release_name, c.helm.namespace) == ("web-podinfo", "web")
    assert (c.helm.install_crds, c.helm.upgrade_crds) == (
        CrdPolicy.CREATE_REPLACE,
        CrdPolicy.CREATE,
    )
    assert c.helm.create_namespace
    assert c.suspend
    assert c.health_timeout == 180
    assert c.overlay is not None
    assert c.overlay.patches == (
        OverlayPatch(
            patch="- op: add\n  path: /metadata/labels/x\n  value: y\n",
            target=(("kind", "Deployment"),),
        ),
    )
    assert c.overlay.images == (ImageOverride(name="nginx", new_tag="1.27"),)
    assert c.ignore_differences == (
        IgnoreDifference(group="", kind="Deployment", json_pointers=("/spec/replicas",)),
    )
    assert spec.depends_on == (
        ObjectRef(
            group="helm.toolkit.fluxcd.io", kind="HelmRelease", name="redis", namespace="apps"
        ),
        ObjectRef(
            group="helm.toolkit.fluxcd.io",
            kind="HelmRelease",
            name="cert-manager",
            namespace="infra",
        ),
    )
    fields = {u.field for u in spec.unhonoured}
    assert fields == {
        "spec.storageNamespace", "spec.test", "spec.install.remediation",
        "spec.driftDetection.mode", "spec.driftDetection.ignore[1]",
    }  # fmt: skip


async def test_repository_credentials_come_from_its_secret_and_are_masked() -> None:
    repo = helm_repository(
        CHARTS, secretRef={"name": "creds"}, certSecretRef={"name": "ca"}, passCredentials=True
    )
    objs = (
        repo,
        secret("creds", username="reader", password="s3cret-pass"),
        secret("ca", **{"ca.crt": "PEM"}),
    )
    spec = await INTERPRETER.child(helm_release(), Objects(parent(), *objs))
    assert spec.config.helm is not None
    (auth,) = spec.config.helm.repositories
    assert (auth.url, auth.username, auth.password, auth.ca_data) == (
        CHARTS,
        "reader",
        "s3cret-pass",
        "PEM",
    )
    assert "s3cret" not in repr(auth)
    assert masking.mask("s3cret-pass") == "***"
    assert "password" not in str(spec.config.to_object(agent_name="a"))
    assert [u.field for u in spec.unhonoured] == [
        "HelmRepository flux-system/charts spec.passCredentials"
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"chart": None}, "give exactly one of spec.chart.spec and spec.chartRef"),
        ({"chartRef": {"kind": "OCIRepository", "name": "x"}}, "give exactly one"),
        (
            {"chart": {"spec": {"chart": "p", "sourceRef": {"kind": "Bucket", "name": "b"}}}},
            "Bucket is not supported",
        ),
        (
            {"install": {"crds": "Always"}},
            "spec.install.crds: 'Always': give Create, CreateReplace or Skip",
        ),
        ({"valuesFrom": [{"kind": "Secret", "name": "x", "targetPath": "a..b"}]}, "not found"),
        (
            {"chart": None, "chartRef": {"kind": "ExternalArtifact", "name": "podinfo"}},
            r"spec.chartRef.kind: 'ExternalArtifact': a chart an ArtifactGenerator composes",
        ),
        (  # a hub's release for a spoke cluster (a Kustomization's patch may add it)
            {"kubeConfig": {"secretRef": {"name": "cluster-kubeconfig"}}},
            r"spec.kubeConfig: its objects are for another cluster",
        ),
    ],
)
async def test_bad_specs_are_errors_naming_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        await INTERPRETER.child(helm_release(**change), ctx())
