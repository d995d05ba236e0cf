"""ValidatingAdmissionPolicy matching and evaluation (pure: params and namespaces given)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from gitkrm.schema.cel.policy import PolicySet, Request


class Lookup:
    def __init__(self, namespaces: dict[str, Any], params: list[dict[str, Any]]) -> None:
        self.ns = namespaces
        self.found = params

    def namespace(self, name: str) -> Mapping[str, Any] | None:
        return self.ns.get(name)

    def params(self, _query: Any, /) -> list[Mapping[str, Any]]:
        return list(self.found)


def policy(**spec: Any) -> dict[str, Any]:
    base = {
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": ["apps"], "apiVersions": ["*"], "operations": ["*"],
                 "resources": ["deployments"]}
            ]
        },
        "validations": [{"expression": "object.spec.replicas < 10"}],
    }  # fmt: skip
    base.update(spec)
    return {"metadata": {"name": "p"}, "spec": base}


def binding(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "b"}, "spec": {"policyName": "p", **spec}}


def request(replicas: int = 20, *, labels: dict[str, str] | None = None, op: str = "CREATE",
            ns: str = "team", resource: str = "deployments") -> Request:  # fmt: skip
    obj = {"metadata": {"name": "web", "namespace": ns, "labels": labels or {}},
           "spec": {"replicas": replicas}}  # fmt: skip
    return Request(op, "apps", "v1", "Deployment", resource, "", ns, "web", obj, None)


NS = {"team": {"metadata": {"name": "team", "labels": {"env": "prod"}}}}


def messages(
    pset: PolicySet, req: Request, params: list[dict[str, Any]] | None = None
) -> list[str]:
    return [d.message for d in pset.admit(req, Lookup(NS, params or [])).denials]


def test_deny_with_the_default_message() -> None:
    pset = PolicySet.of([policy()], [binding()])
    assert messages(pset, request()) == ["failed expression: object.spec.replicas < 10"]
    assert messages(pset, request(3)) == []
    assert messages(pset, request(resource="statefulsets")) == []


@pytest.mark.parametrize(
    ("match", "matched"),
    [
        ({"namespaceSelector": {"matchLabels": {"env": "prod"}}}, True),
        ({"namespaceSelector": {"matchLabels": {"env": "dev"}}}, False),
        ({"objectSelector": {"matchExpressions": [
            {"key": "skip", "operator": "DoesNotExist"}]}}, True),
        ({"excludeResourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"],
                                    "resources": ["*"], "resourceNames": ["web"]}]}, False),
    ],
)  # fmt: skip
def test_binding_match_resources_narrow(match: dict[str, Any], matched: bool) -> None:
    pset = PolicySet.of([policy()], [binding(matchResources=match)])
    assert bool(messages(pset, request())) is matched


def test_params_variables_and_match_conditions() -> None:
    pset = PolicySet.of(
        [policy(
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
            matchConditions=[{"name": "not-exempt",
                              "expression": "!('exempt' in object.metadata.labels)"}],
            variables=[{"name": "max", "expression": "int(params.data.max)"}],
            validations=[{"expression": "object.spec.replicas <= variables.max",
                          "messageExpression": "'at most ' + string(variables.max)"}],
        )],
        [binding(paramRef={"selector": {}, "parameterNotFoundAction": "Deny"})],
    )  # fmt: skip
    limits = [{"data": {"max": "5"}}, {"data": {"max": "50"}}]
    assert messages(pset, request(20), limits) == ["at most 5"]  # every param is checked
    assert messages(pset, request(20, labels={"exempt": "yes"}), limits) == []
    assert messages(pset, request(20), []) == [
        "no params found for policy binding with `Deny` parameterNotFoundAction"
    ]


def test_errors_follow_the_failure_policy_and_actions_warn_and_audit() -> None:
    broken = [{"expression": "object.spec.missing > 1"}]
    fail = PolicySet.of([policy(validations=broken)], [binding()])
    assert messages(fail, request()) == [
        "expression 'object.spec.missing > 1' resulted in error: no such key: missing"
    ]
    ignore = PolicySet.of([policy(validations=broken, failurePolicy="Ignore")], [binding()])
    assert messages(ignore, request()) == []
    audited = PolicySet.of(
        [policy(auditAnnotations=[
            {"key": "replicas", "valueExpression": "string(object.spec.replicas)"}])],
        [binding(validationActions=["Warn", "Audit"])],
    )  # fmt: skip
    decision = audited.admit(request(), Lookup(NS, []))
    assert decision.denials == []
    assert decision.warnings == [
        "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': "
        "failed expression: object.spec.replicas < 10"
    ]
    assert decision.audit == {
        "p/validation_failure": "failed expression: object.spec.replicas < 10",
        "p/replicas": "20",
    }
