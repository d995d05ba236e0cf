"""Argo CD's build environment substitution (gitkrm.sync.buildenv). The expansion cases
follow Argo CD's own `TestEnv_Envsubst` (argoproj/argo-cd, Apache-2.0,
pkg/apis/application/v1alpha1/types_test.go), which pins Go's `os.Expand` behaviour."""

from __future__ import annotations

import pytest

from gitkrm.charts.spec import HelmSpec
from gitkrm.sync import buildenv
from gitkrm.sync.appsource_spec import BuildEnv, JsonnetSpec, JsonnetVar
from gitkrm.sync.overlay_spec import ImageOverride, Overlay

FOO = {"FOO": "bar"}


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("", ""),
        ("$FOO", "bar"),
        ("${FOO}", "bar"),
        ("${FOO", "FOO"),  # "${" without its brace is eaten
        ("$BAR", ""),  # unknown names become empty
        ("${BAR}", ""),
        ("echo $FOO; echo $BAR; echo ${FOO}; echo ${BAR}; echo ${FOO",
         "echo bar; echo ; echo bar; echo ; echo FOO"),
        ("$$FOO", "$FOO"),  # `$$` escapes
        ("a $ b", "a $ b"),  # a `$` before no name stays
        ("cost: 5$", "cost: 5$"),
        ("${}x", "x"),
        ("$1x", "x"),  # a special one-character name
        ("$FOO.yaml", "bar.yaml"),
        ("${FOO}_1", "bar_1"),
        ("$FOO_1", ""),  # the name runs on through letters, digits and underscores
    ],
)  # fmt: skip
def test_expand_is_gos_os_expand_with_argo_cds_mapping(text: str, want: str) -> None:
    assert buildenv.expand(text, FOO) == want


ENV = BuildEnv(
    app_name="web", namespace="shop", project="default",
    repo_url="https://example.test/org/repo.git", source_path="charts/web",
    target_revision="main",
)  # fmt: skip
SHA = "f913b6cbf58aa5ae5ca1f8a2b149477aebcbd9d8"


def test_the_variables_of_a_revision_are_argo_cds() -> None:
    got = ENV.variables(SHA)
    assert got["ARGOCD_APP_REVISION"] == SHA
    assert got["ARGOCD_APP_REVISION_SHORT"] == "f913b6c"
    assert got["ARGOCD_APP_REVISION_SHORT_8"] == "f913b6cb"
    assert got["ARGOCD_APP_NAMESPACE"] == "shop"
    assert got["ARGOCD_APP_SOURCE_PATH"] == "charts/web"
    assert set(got) == set(buildenv.NAMES)


def test_helm_parameter_values_and_file_paths_are_substituted_refs_first() -> None:
    spec = HelmSpec(
        value_files=("values-$ARGOCD_APP_NAME.yaml", "$values/envs/$ARGOCD_APP_NAMESPACE.yaml"),
        set=("image.tag=$ARGOCD_APP_REVISION_SHORT", "literal=$$HOME", "eq=a=$ARGOCD_APP_NAME"),
        set_string=(("rev", "${ARGOCD_APP_REVISION}"),),
        file_parameters=(("cfg", "files/$ARGOCD_APP_NAME.conf"),),
    )
    got = buildenv.helm(spec, ENV.variables(SHA))
    assert got.value_files == ("values-web.yaml", "$values/envs/shop.yaml")
    assert got.set == ("image.tag=f913b6c", "literal=$HOME", "eq=a=web")
    assert got.set_string == (("rev", SHA),)
    assert got.file_parameters == (("cfg", "files/web.conf"),)


def test_jsonnet_variables_and_arguments_are_substituted() -> None:
    spec = JsonnetSpec(
        ext_vars=(JsonnetVar("app", "$ARGOCD_APP_NAME"),),
        tlas=(JsonnetVar("ns", "'${ARGOCD_APP_NAMESPACE}'", code=True),),
    )
    got = buildenv.jsonnet(spec, ENV.variables(SHA))
    assert got.ext_vars == (JsonnetVar("app", "web"),)
    assert got.tlas == (JsonnetVar("ns", "'shop'", code=True),)


@pytest.mark.parametrize("annotations", [False, True])
def test_kustomize_images_and_labels_are_substituted_annotations_when_asked(
    annotations: bool,
) -> None:
    spec = Overlay(
        images=(ImageOverride(name="web", new_tag="$ARGOCD_APP_REVISION_SHORT"),),
        labels=(("app", "$ARGOCD_APP_NAME"),),
        annotations=(("from", "$ARGOCD_APP_SOURCE_REPO_URL"),),
    )
    got = buildenv.overlay(spec, ENV.variables(SHA), annotations=annotations)
    assert got.images == (ImageOverride(name="web", new_tag="f913b6c"),)
    assert got.labels == (("app", "web"),)
    want = "https://example.test/org/repo.git" if annotations else "$ARGOCD_APP_SOURCE_REPO_URL"
    assert got.annotations == (("from", want),)


@pytest.mark.parametrize(
    ("path", "want"),
    [("$ARGOCD_APP_NAME.yaml", True), ("${ARGOCD_APP_NAMESPACE}/v.yaml", True),
     ("$values/v.yaml", False), ("$", False), ("values.yaml", False)],
)  # fmt: skip
def test_a_path_names_a_variable_or_a_ref(path: str, want: bool) -> None:
    assert buildenv.names_variable(path) is want
