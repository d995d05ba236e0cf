"""`spec.helm` of a GitSource, and the flags layered over it."""

from __future__ import annotations

import pytest

from gitkrm.charts.spec import HelmSpec, merge_values
from gitkrm.errors import BadRequest


def test_from_spec_and_back() -> None:
    spec = {
        "releaseName": "web",
        "namespace": "shop",
        "valueFiles": ["values-prod.yaml"],
        "values": {"replicas": 2, "image": {"tag": "1.1"}},
        "set": ["greeting=hi"],
        "skipCRDs": True,
        "kubeVersion": "v1.31.0",
        "apiVersions": ["monitoring.coreos.com/v1"],
    }
    h = HelmSpec.from_spec(spec)
    assert h.release_name == "web"
    assert h.values == {"replicas": 2, "image": {"tag": "1.1"}}
    assert h.to_spec() == spec
    assert HelmSpec.from_spec(h.to_spec()) == h  # hashable, comparable values


def test_a_leading_slash_names_a_file_from_the_repositorys_top() -> None:
    # Not the host's /etc/passwd: the repository's etc/passwd, read from its tree.
    assert HelmSpec.from_spec({"valueFiles": ["/etc/passwd"]}).outside_chart
    assert not HelmSpec.from_spec({"valueFiles": ["values.yaml"]}).outside_chart


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ({"valueFiles": ["/../etc/passwd"]}, "valueFiles[0]: '/../etc/passwd' must be a path"),
        ({"valueFiles": ["../x.yaml"]}, "must be a path inside the repository"),
        ({"set": ["novalue"]}, "spec.helm.set[0]: 'novalue' is not KEY=VALUE"),
    ],
)
def test_bad_specs_are_refused(spec: dict[str, object], complaint: str) -> None:
    with pytest.raises(BadRequest) as e:
        HelmSpec.from_spec(spec)
    assert complaint in e.value.message


def test_flags_merge_over_the_spec() -> None:
    h = HelmSpec.from_spec({"values": {"a": {"b": 1, "c": 2}}, "set": ["x=1"]})
    out = h.with_overrides(values={"a": {"c": 3}}, sets=("y=2",))
    assert out.values == {"a": {"b": 1, "c": 3}}
    assert out.set == ("x=1", "y=2")


def test_merge_values_replaces_lists_and_scalars() -> None:
    assert merge_values({"l": [1], "m": {"k": 1}}, {"l": [2], "m": {"j": 2}}) == {
        "l": [2],
        "m": {"k": 1, "j": 2},
    }


def test_the_release_fields_of_flux_and_argo_cd_go_through_spec_helm() -> None:
    from gitkrm.charts.spec import CrdPolicy

    spec = HelmSpec(
        release_name="web",
        install_crds=CrdPolicy.CREATE,
        upgrade_crds=CrdPolicy.SKIP,
        create_namespace=True,
        template_mode=True,
        set_string=(("port", "80"),),
        file_parameters=(("config", "files/app.conf"),),
        ignore_missing_value_files=True,
    )
    assert HelmSpec.from_spec(spec.to_spec()) == spec
