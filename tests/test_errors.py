"""The error hierarchy maps to Kubernetes Status reasons and codes, both ways."""

from __future__ import annotations

import pytest

from gitkrm import errors
from gitkrm.errors import Cause, GitkrmError, Invalid, NotFound, from_status

EXPECTED = {
    errors.BadRequest: ("BadRequest", 400),
    errors.Unauthorized: ("Unauthorized", 401),
    errors.Forbidden: ("Forbidden", 403),
    errors.NotFound: ("NotFound", 404),
    errors.MethodNotAllowed: ("MethodNotAllowed", 405),
    errors.AlreadyExists: ("AlreadyExists", 409),
    errors.Conflict: ("Conflict", 409),
    errors.Expired: ("Expired", 410),
    errors.RequestEntityTooLarge: ("RequestEntityTooLarge", 413),
    errors.UnsupportedMediaType: ("UnsupportedMediaType", 415),
    errors.Invalid: ("Invalid", 422),
    errors.TooManyRequests: ("TooManyRequests", 429),
    errors.InternalError: ("InternalError", 500),
    errors.ServiceUnavailable: ("ServiceUnavailable", 503),
    errors.Timeout: ("Timeout", 504),
}


@pytest.mark.parametrize(("cls", "reason_code"), list(EXPECTED.items()))
def test_reason_and_code(cls: type[GitkrmError], reason_code: tuple[str, int]) -> None:
    assert issubclass(cls, GitkrmError)
    assert (cls.reason, cls.code) == reason_code
    status = cls("boom").to_status()
    assert status["kind"] == "Status"
    assert status["status"] == "Failure"
    assert (status["reason"], status["code"]) == reason_code
    assert type(from_status(status)) is cls


def test_invalid_message_and_causes_follow_the_api_server() -> None:
    causes = [
        Cause(
            type="FieldValueInvalid",
            message='Invalid value: "x": must be an integer',
            field="spec.replicas",
        ),
        Cause(type="FieldValueRequired", message="Required value", field="spec.selector"),
    ]
    err = Invalid.for_object(kind="Deployment", group="apps", name="web", causes=causes)
    assert err.message == (
        'Deployment.apps "web" is invalid: [spec.replicas: Invalid value: "x": must be an '
        "integer, spec.selector: Required value]"
    )
    status = err.to_status()
    assert status["details"]["kind"] == "Deployment"
    assert status["details"]["group"] == "apps"
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.replicas", "spec.selector"]
    back = from_status(status)
    assert isinstance(back, Invalid)
    assert back.causes == tuple(causes)


def test_single_cause_is_not_bracketed() -> None:
    err = Invalid.for_object(
        kind="ConfigMap",
        group="",
        name="c",
        causes=[Cause(type="FieldValueRequired", message="Required value", field="metadata.name")],
    )
    assert err.message == 'ConfigMap "c" is invalid: metadata.name: Required value'


def test_from_status_falls_back_on_code() -> None:
    err = from_status({"kind": "Status", "code": 404, "message": "gone"})
    assert isinstance(err, NotFound)
    assert err.message == "gone"
    assert isinstance(from_status({}, http_code=418), errors.InternalError)


def test_immutability_is_a_typed_cause() -> None:
    from gitkrm.errors import Cause, Invalid, from_status
    from gitkrm.schema import fielderrors as fe

    typed = Invalid.for_object(
        kind="Job", group="batch", name="j", causes=[fe.immutable("spec.template", {"a": 1})]
    )
    assert typed.immutable
    assert "immutable" not in typed.causes[0].to_dict(), "the Status body stays Kubernetes'"
    other = Invalid.for_object(
        kind="Job", group="batch", name="j", causes=[Cause("FieldValueInvalid", "bad value")]
    )
    assert not other.immutable
    # A cluster says it in words: read once when its Status becomes an error.
    status = {
        "kind": "Status",
        "reason": "Invalid",
        "code": 422,
        "message": 'Job.batch "j" is invalid: spec.template: ... field is immutable',
        "details": {
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: ...: field is immutable",
                    "field": "spec.template",
                }
            ]
        },
    }
    rebuilt = from_status(status)
    assert isinstance(rebuilt, Invalid)
    assert rebuilt.immutable
