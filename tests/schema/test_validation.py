"""Schema validation of built-in kinds: every cause with its field path, unknown fields."""

from __future__ import annotations

import datetime

import pytest

from gitkrm.errors import BadRequest, Invalid
from gitkrm.krm.types import FieldValidation
from gitkrm.schema import Registry
from gitkrm.schema.validation import check
from tests.schema.schema_objects import clone, deployment, pod_spec, service

DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"


def test_valid_objects_pass_the_fast_path() -> None:
    assert check(DEPLOYMENT, deployment()) is None
    assert check("io.k8s.api.core.v1.Service", service()) is None


def test_type_error_is_worded_like_kube(registry: Registry) -> None:
    obj = deployment(replicas="x")
    with pytest.raises(Invalid) as e:
        registry.admit(obj)
    (cause,) = [c for c in e.value.causes if c.field == "spec.replicas"]
    assert cause.type == "FieldValueInvalid"
    assert cause.message == (
        'Invalid value: "x": spec.replicas in body must be of type integer: "string"'
    )
    assert 'Deployment.apps "web" is invalid' in str(e.value)


def test_every_cause_is_reported(registry: Registry) -> None:
    obj = deployment(replicas="three", paused="no")
    container = pod_spec(obj)["containers"][0]
    container["ports"][0]["containerPort"] = "eighty"
    del container["name"]
    with pytest.raises(Invalid) as e:
        registry.admit(obj)
    fields = {c.field for c in e.value.causes}
    assert {
        "spec.replicas",
        "spec.paused",
        "spec.template.spec.containers[0].ports[0].containerPort",
        "spec.template.spec.containers[0].name",
    } <= fields
    required = next(c for c in e.value.causes if c.field.endswith("containers[0].name"))
    assert required.type == "FieldValueRequired"
    assert required.message == "Required value"


def test_enum_of_api_version() -> None:
    report = check(DEPLOYMENT, {**deployment(), "apiVersion": "apps/v1beta1"})
    assert report is not None
    (cause,) = report.causes
    assert cause.field == "apiVersion"
    assert cause.type == "FieldValueNotSupported"
    assert cause.message == 'Unsupported value: "apps/v1beta1": supported values: "apps/v1"'


def test_unknown_fields_are_listed_with_paths() -> None:
    obj = deployment(foo=1)
    pod_spec(obj)["containers"][0]["imagePullPolicyx"] = "Always"
    report = check(DEPLOYMENT, obj)
    assert report is not None
    assert report.causes == []
    assert sorted(report.unknown) == sorted(
        [("spec", "foo"), ("spec", "template", "spec", "containers", 0, "imagePullPolicyx")]
    )


def test_strict_rejects_unknown_fields_naming_them(registry: Registry) -> None:
    obj = deployment(foo=1)
    pod_spec(obj)["containers"][0]["imagePullPolicyx"] = "Always"
    with pytest.raises(BadRequest) as e:
        registry.admit(obj, field_validation=FieldValidation.STRICT)
    assert e.value.message.startswith(
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
    )
    assert 'unknown field "spec.foo"' in e.value.message
    assert 'unknown field "spec.template.spec.containers[0].imagePullPolicyx"' in e.value.message


def test_warn_drops_and_warns(registry: Registry) -> None:
    obj = deployment(foo=1)
    obj["metadata"]["bogus"] = True
    warnings = registry.admit(obj, field_validation=FieldValidation.WARN)
    assert sorted(warnings) == ['unknown field "metadata.bogus"', 'unknown field "spec.foo"']
    assert "foo" not in obj["spec"]
    assert "bogus" not in obj["metadata"]


def test_ignore_drops_silently(registry: Registry) -> None:
    obj = service(foo=1)
    assert registry.admit(obj, field_validation=FieldValidation.IGNORE) == []
    assert "foo" not in obj["spec"]


def test_unknown_and_invalid_together_under_warn(registry: Registry) -> None:
    obj = deployment(foo=1, replicas="x")
    with pytest.raises(Invalid) as e:
        registry.admit(obj, field_validation=FieldValidation.WARN)
    assert [c.field for c in e.value.causes] == ["spec.replicas"]


def test_int_or_string_and_quantity_accept_both_forms(registry: Registry) -> None:
    obj = service()
    obj["spec"]["ports"][0]["targetPort"] = "http"
    registry.admit(obj)
    obj = deployment()
    pod_spec(obj)["containers"][0]["resources"] = {"limits": {"cpu": 1, "memory": "1Gi"}}
    registry.admit(obj)
    bad = service()
    bad["spec"]["ports"][0]["targetPort"] = [80]
    with pytest.raises(Invalid, match=r"spec\.ports\[0\]\.targetPort"):
        registry.admit(bad)


def test_original_object_is_untouched_when_valid_and_defaulted_in_place(registry: Registry) -> None:
    obj = deployment()
    before = clone(obj)
    registry.admit(obj)
    assert obj != before
    assert obj["spec"]["template"] == {**obj["spec"]["template"]}
    assert obj["metadata"] == before["metadata"]


def test_values_json_cannot_hold_are_a_bad_request(registry: Registry) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
        "data": {"day": datetime.date(2024, 1, 1)},
    }
    with pytest.raises(BadRequest, match="not a JSON object"):
        registry.admit(cm)
