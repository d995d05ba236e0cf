"""A chart rendered as a release by Helm itself: values in Helm's order, the schema, the
capabilities, install then upgrade, subcharts and their conditions, crds/, .helmignore, and
failures that name the chart, the template and Helm's message."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gitkrm.charts.library import ChartError
from gitkrm.charts.model import Capabilities, RenderedRelease
from gitkrm.charts.release import ChartRenderer
from gitkrm.charts.spec import HelmSpec
from tests.charts.chart_files import relative, shop_files

CAPS = Capabilities(kube_version="v1.33.0", api_versions=("v1", "apps/v1"))


def render(
    renderer: ChartRenderer,
    files: dict[str, bytes] | None = None,
    *,
    caps: Capabilities = CAPS,
    digest: str = "d1",
) -> RenderedRelease:
    rel = relative(files or shop_files())
    return renderer.render(directory="shop", digest=digest, read=lambda: rel, capabilities=caps)


def objects(r: RenderedRelease) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for _, text in r.manifests:
        for d in yaml.safe_load_all(text):
            if d:
                out[f"{d['kind']}/{d['metadata']['name']}"] = d
    return out


def settings(r: RenderedRelease) -> dict[str, str]:
    data: dict[str, str] = objects(r)[f"ConfigMap/{r.release.name}-settings"]["data"]
    return data


def test_the_release_is_named_after_the_directory_in_the_default_namespace() -> None:
    r = render(ChartRenderer(default_namespace="shop-ns"))
    assert (r.release.name, r.release.namespace) == ("shop", "shop-ns")
    assert (r.release.chart, r.release.version, r.release.install) == ("shop", "1.0.0", True)
    paths = [p for p, _ in r.manifests]
    assert "shop/crds/widgets.yaml" in paths  # repository paths, not Helm's
    assert "shop/templates/deployment.yaml" in paths
    assert "shop/charts/cache/templates/configmap.yaml" in paths
    assert not [p for p in paths if p.endswith("NOTES.txt")]
    assert "Pod/shop-test" not in objects(r)  # test hooks never run


def test_values_files_then_values_then_set_as_helm_template_does() -> None:
    files = shop_files()
    files["shop/values-prod.yaml"] = b"replicas: 3\ngreeting: prod\nimage:\n  tag: '2.0'\n"
    spec = HelmSpec.from_spec(
        {
            "releaseName": "web",
            "namespace": "prod",
            "valueFiles": ["values-prod.yaml"],
            "values": {"greeting": "inline", "cache": {"size": 128}},
            "set": ["greeting=from-set"],
        }
    )
    r = render(ChartRenderer(spec=spec), files)
    objs = objects(r)
    assert objs["Deployment/web"]["spec"]["replicas"] == 3  # the file
    assert objs["Deployment/web"]["spec"]["template"]["spec"]["containers"][0]["image"].endswith(
        ":2.0"
    )
    assert settings(r)["greeting"] == "from-set"  # --set last
    assert objs["ConfigMap/web-cache"]["data"]["size"] == "128"  # into the subchart


def test_a_subchart_disabled_by_its_condition_renders_nothing() -> None:
    spec = HelmSpec.from_spec({"values": {"cache": {"enabled": False}}})
    assert "ConfigMap/shop-cache" not in objects(render(ChartRenderer(spec=spec)))


def test_skip_crds_leaves_crds_out_and_crds_are_never_pruned() -> None:
    crd = objects(render(ChartRenderer()))["CustomResourceDefinition/widgets.shop.example.com"]
    assert crd["metadata"]["annotations"]["gitkrm.io/prune"] == "disabled"
    spec = HelmSpec.from_spec({"skipCRDs": True})
    assert "CustomResourceDefinition/widgets.shop.example.com" not in objects(
        render(ChartRenderer(spec=spec))
    )


def test_the_capabilities_are_the_targets() -> None:
    r = render(ChartRenderer(), caps=Capabilities(kube_version="v1.33.0", api_versions=("v1",)))
    s = settings(r)
    assert s["kubeVersion"] == "v1.33.0"  # not Helm's default (v1.36)
    assert s["monitoring"] == "false"
    assert s["lookup"] == "0"  # lookup finds nothing, as with helm template and Argo CD
    caps = Capabilities(
        kube_version="v1.30.2",
        api_versions=("v1", "monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"),
    )
    s = settings(render(ChartRenderer(), caps=caps))
    assert (s["kubeVersion"], s["monitoring"]) == ("v1.30.2", "true")
    # The source can add API versions and pin the version.
    spec = HelmSpec.from_spec({"kubeVersion": "v1.29.0", "apiVersions": ["shop.example.com/v1"]})
    s = settings(render(ChartRenderer(spec=spec)))
    assert (s["kubeVersion"], s["widgets"]) == ("v1.29.0", "true")


def test_install_first_then_upgrade_with_the_hooks_of_each(tmp_path: Any) -> None:
    state = tmp_path / "helm.json"
    charts = ChartRenderer(state_file=state)
    first = render(charts)
    assert settings(first)["installing"] == "true"
    hooks = {k: v for k, v in objects(first).items() if "migrate" in k or "announce" in k}
    assert set(hooks) == {"ConfigMap/shop-migrate-install", "ConfigMap/shop-announce"}
    ann = hooks["ConfigMap/shop-migrate-install"]["metadata"]["annotations"]
    assert ann["argocd.argoproj.io/hook"] == "PreSync"
    charts.mark_installed([first.release])
    charts.rotate()
    # Nothing changed since it was applied: the applied render stays (no flip, no new hooks).
    assert render(charts) is first
    second = render(charts, digest="d2")  # a new revision of the chart: an upgrade
    assert (settings(second)["installing"], settings(second)["upgrading"]) == ("false", "true")
    assert {k for k in objects(second) if "migrate" in k or "announce" in k} == {
        "ConfigMap/shop-migrate-upgrade",
        "ConfigMap/shop-announce",
    }
    # A new process (a restart) reads the record: still an upgrade.
    again = render(ChartRenderer(state_file=state), digest="d3")
    assert settings(again)["upgrading"] == "true"


def test_a_restart_renders_nothing_rendered_before_and_random_values_stay(
    tmp_path: Any,
) -> None:
    files = shop_files()
    files["shop/templates/secret.yaml"] = (
        b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-db\n"
        b"stringData:\n  password: {{ randAlphaNum 24 | quote }}\n"
    )
    state = tmp_path / "helm.json"
    charts = ChartRenderer(state_file=state)
    first = render(charts, files)
    # Rendered twice: the template that differs is named in a warning.
    assert [p for p, _ in first.warnings] == ["shop/templates/secret.yaml"]
    assert "renders differently each time" in first.warnings[0][1]
    password = objects(first)["Secret/shop-db"]["stringData"]["password"]
    charts.mark_installed([first.release])
    charts.rotate()
    assert state.stat().st_mode & 0o777 == 0o600  # rendered Secrets hold their data

    def never() -> dict[str, bytes]:
        raise AssertionError("read: the render was not found in the state dir")

    restarted = ChartRenderer(state_file=state)
    again = restarted.render(directory="shop", digest="d1", read=never, capabilities=CAPS)
    assert objects(again)["Secret/shop-db"]["stringData"]["password"] == password
    assert again.warnings == first.warnings


def test_a_deterministic_chart_is_rendered_once() -> None:
    assert render(ChartRenderer()).warnings == ()


def test_renders_are_cached_by_everything_they_depend_on() -> None:
    charts = ChartRenderer()
    calls = 0
    rel = relative(shop_files())

    def read() -> dict[str, bytes]:
        nonlocal calls
        calls += 1
        return rel

    a = charts.render(directory="shop", digest="d1", read=read, capabilities=CAPS)
    b = charts.render(directory="shop", digest="d1", read=read, capabilities=CAPS)
    assert a is b
    assert calls == 1  # nothing read the second time
    charts.render(directory="shop", digest="d2", read=read, capabilities=CAPS)
    assert calls == 2


def test_helmignore_is_honoured() -> None:
    files = shop_files()
    files["shop/templates/broken.yaml.orig"] = b"{{ nonsense"
    files["shop/notes/x.yaml"] = b"{{ more nonsense"
    render(ChartRenderer(), files)  # ignored: no template error


def test_a_broken_template_names_the_chart_template_and_helms_message() -> None:
    files = shop_files()
    files["shop/templates/service.yaml"] += b"\n{{ .Values.nope.deeper }}\n"
    with pytest.raises(ChartError) as e:
        render(ChartRenderer(), files)
    assert e.value.chart == "shop"
    assert "shop/templates/service.yaml" in e.value.message
    assert "nil pointer evaluating interface {}.deeper" in e.value.message


def test_values_failing_the_schema_are_refused_with_helms_message() -> None:
    spec = HelmSpec.from_spec({"values": {"replicas": 0}})
    with pytest.raises(ChartError) as e:
        render(ChartRenderer(spec=spec))
    assert "values rejected by Helm" in e.value.message
    assert "/replicas" in e.value.message
    assert "minimum" in e.value.message


def test_a_missing_value_file_is_named() -> None:
    spec = HelmSpec.from_spec({"valueFiles": ["values-staging.yaml"]})
    with pytest.raises(ChartError, match=r"value file 'values-staging\.yaml' is not in the chart"):
        render(ChartRenderer(spec=spec))


def test_a_bad_set_expression_is_named() -> None:
    spec = HelmSpec.from_spec({"set": ["a[x]=1"]})
    with pytest.raises(ChartError, match=r"--set 'a\[x\]=1': error parsing index"):
        render(ChartRenderer(spec=spec))


def test_argo_cd_semantics_set_string_file_parameters_and_values_of_another_source() -> None:
    """`template_mode` (an Argo CD Helm source): always an install, hooks on every sync;
    forceString parameters and --set-file; `$ref/` files give values but are not packed."""
    spec = HelmSpec(
        release_name="web",
        template_mode=True,
        value_files=("$values/prod.yaml", "missing.yaml"),
        ignore_missing_value_files=True,
        set_string=(("greeting", "0123"),),
        file_parameters=(("image.tag", "$values/tag.txt"),),
    )
    files = shop_files()
    files["shop/$values/prod.yaml"] = b"replicas: 4\n"
    files["shop/$values/tag.txt"] = b"7.7"
    renderer = ChartRenderer(spec=spec)
    first = render(renderer, files)
    renderer.mark_installed([first.release])
    again = render(renderer, files, digest="d2")  # another revision: still an install
    for r in (first, again):
        assert settings(r)["installing"] == "true"
        assert settings(r)["greeting"] == "0123"
        objs = objects(r)
        assert objs["Deployment/web"]["spec"]["replicas"] == 4
        assert objs["Deployment/web"]["spec"]["template"]["spec"]["containers"][0][
            "image"
        ].endswith(":7.7")
        hooks = {
            k
            for k, o in objs.items()
            if "argocd.argoproj.io/hook" in o["metadata"].get("annotations", {})
        }
        assert {"ConfigMap/web-migrate-install", "ConfigMap/web-migrate-upgrade"} <= hooks
    assert not [p for p, _ in first.manifests if "$values" in p]


@pytest.mark.parametrize(
    ("value", "shown"),
    [("20240101", "20240101"), ("6752038", "6752038"), ("8080", "8080"),
     ("-1500000", "-1500000"), ("true", "true")],
)  # fmt: skip
def test_an_integer_set_prints_as_written_as_helm_set_does(value: str, shown: str) -> None:
    """`helm --set` makes an int64 (printed as written); JSON's float64 would print a
    million and more as 2.0240101e+07 (a date tag, a commit sha of digits)."""
    r = render(ChartRenderer(spec=HelmSpec.from_spec({"set": [f"cache.size={value}"]})))
    assert objects(r)["ConfigMap/shop-cache"]["data"]["size"] == shown
