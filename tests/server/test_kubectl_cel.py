"""kubectl as the judge of CRD `x-kubernetes-validations`: CEL rules refuse objects on create,
update and server-side apply with kube-apiserver's words (422, the field path, message,
messageExpression, reason, fieldPath, transition rules), with kubectl 1.32 and 1.28."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gitkrm.server import ServeOptions, ServerThread
from gitkrm.server.context import Limits
from tests.server.conftest import Kubectl, kubectl_path
from tests.support.builders import crd


def scaler_crd(kind: str = "Scaler", *, tier_rule: str = "self == oldSelf") -> str:
    """The CRD of `kind` in cel.example.com whose spec carries every kind of CEL rule."""
    spec = {
        "type": "object",
        "x-kubernetes-validations": [
            {
                "rule": "self.minReplicas <= self.maxReplicas",
                "message": "minReplicas must not exceed maxReplicas",
                "fieldPath": ".minReplicas",
            },
            {
                "rule": "quantity(self.memory).isLessThan(quantity('1Gi'))",
                "messageExpression": "'memory ' + self.memory + ' is 1Gi or more'",
            },
            {
                "rule": "!has(self.endpoint) || url(self.endpoint).getScheme() == 'https'",
                "reason": "FieldValueForbidden",
            },
        ],
        "properties": {
            "minReplicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "memory": {"type": "string"},
            "endpoint": {"type": "string"},
            "tier": {
                "type": "string",
                "x-kubernetes-validations": [{"rule": tier_rule, "message": "tier is immutable"}],
            },
        },
    }
    schema = {"type": "object", "properties": {"spec": spec}}
    obj = crd(kind, "cel.example.com", status_subresource=False, schema=schema)
    return yaml.safe_dump(obj, sort_keys=False)


CRD = scaler_crd()

SCALER = """\
apiVersion: cel.example.com/v1
kind: Scaler
metadata: {{name: {name}, namespace: default}}
spec: {{minReplicas: {min}, maxReplicas: 5, memory: {memory}, tier: {tier}{extra}}}
"""


def scaler(
    name: str, *, min: int = 1, memory: str = "512Mi", tier: str = "gold", extra: str = ""
) -> str:
    return SCALER.format(name=name, min=min, memory=memory, tier=tier, extra=extra)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    state = tmp_path_factory.mktemp("state")
    options = ServeOptions(port=0, state_dir=state, limits=Limits(stuck_watch_timeout=2.0))
    with ServerThread(store_path=str(state / "store.db"), options=options) as s:
        yield s


@pytest.fixture(scope="module", params=[None, "1.28"], ids=["kubectl-1.32", "kubectl-1.28"])
def kc(
    request: pytest.FixtureRequest, server: ServerThread, tmp_path_factory: pytest.TempPathFactory
) -> Kubectl:
    assert server.bound is not None
    assert server.bound.kubeconfig is not None
    home: Path = tmp_path_factory.mktemp("home")
    k = Kubectl(binary=kubectl_path(request.param), kubeconfig=server.bound.kubeconfig, home=home)
    k.run("apply", "-f", "-", input=CRD)
    return k


def _refused(kc: Kubectl, *args: str, manifest: str) -> str:
    proc = kc.run(*args, "-f", "-", input=manifest, check=False)
    assert proc.returncode == 1, proc.stdout
    return proc.stderr


def test_rules_refuse_a_create_with_the_api_servers_words(kc: Kubectl) -> None:
    name = f"bad-{kc.binary.name.replace('.', '-')}"
    err = _refused(
        kc, "apply", manifest=scaler(name, min=9, memory="2Gi", extra=", endpoint: 'http://x'")
    )
    assert f'The Scaler "{name}" is invalid: ' in err
    assert (
        'spec.minReplicas: Invalid value: "object": minReplicas must not exceed maxReplicas' in err
    )
    assert 'spec: Invalid value: "object": memory 2Gi is 1Gi or more' in err
    assert (
        "spec: Forbidden: failed rule: !has(self.endpoint) || "
        "url(self.endpoint).getScheme() == 'https'" in err
    )
    assert "not found" in kc.run("get", "scaler", name, check=False).stderr.lower()


def test_valid_object_is_admitted_and_a_transition_rule_guards_updates(kc: Kubectl) -> None:
    name = f"ok-{kc.binary.name.replace('.', '-')}"
    kc.run("apply", "-f", "-", input=scaler(name))
    assert kc("get", "scaler", name, "-o", "jsonpath={.spec.tier}") == "gold"
    err = _refused(kc, "apply", manifest=scaler(name, tier="silver"))
    assert (
        f'The Scaler "{name}" is invalid: spec.tier: Invalid value: "string": tier is immutable'
        in err
    )
    kc.run("apply", "-f", "-", input=scaler(name, min=2))  # other fields still change
    assert kc("get", "scaler", name, "-o", "jsonpath={.spec.minReplicas}") == "2"


def test_server_side_apply_is_refused_too(kc: Kubectl) -> None:
    name = f"ssa-{kc.binary.name.replace('.', '-')}"
    err = _refused(kc, "apply", "--server-side", manifest=scaler(name, min=7))
    assert (
        'spec.minReplicas: Invalid value: "object": minReplicas must not exceed maxReplicas' in err
    )
    kc.run("apply", "--server-side", "-f", "-", input=scaler(name))
    err = _refused(kc, "apply", "--server-side", manifest=scaler(name, tier="bronze"))
    assert 'spec.tier: Invalid value: "string": tier is immutable' in err


def test_a_rule_that_does_not_compile_refuses_the_crd(kc: Kubectl) -> None:
    bad = scaler_crd("Broken", tier_rule="self ==")
    err = _refused(kc, "apply", manifest=bad)
    assert "x-kubernetes-validations[0].rule" in err
    assert "compilation failed" in err


POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: {name}}}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [configmaps]
  matchConditions:
  - name: labelled
    expression: >-
      has(object.metadata.labels) && 'policy' in object.metadata.labels
  validations:
  - expression: >-
      object.metadata.labels['policy'] == '{name}'
      ? has(object.data) && size(object.data) <= 2 : true
    messageExpression: "'at most 2 keys, got ' + string(size(object.data))"
  - expression: "!object.metadata.name.startsWith('tmp-')"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: {name}-binding}}
spec:
  policyName: {name}
  validationActions: [{actions}]
"""


def configmap(name: str, policy: str, keys: int) -> str:
    data = ", ".join(f"k{i}: v" for i in range(keys))
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default, "
        f"labels: {{policy: {policy}}}}}\ndata: {{{data}}}\n"
    )


def test_a_policy_denies_over_http_with_the_api_servers_words(kc: Kubectl) -> None:
    tag = kc.binary.name.replace(".", "-")
    name = f"deny-{tag}"
    kc.run("apply", "-f", "-", input=POLICY.format(name=name, actions="Deny"))
    err = _refused(kc, "apply", manifest=configmap(f"big-{tag}", name, 3))
    # kubectl words a 422 from its causes, as the Kubernetes docs show it for a cluster.
    assert (
        f"The configmaps \"big-{tag}\" is invalid: : ValidatingAdmissionPolicy '{name}' with "
        f"binding '{name}-binding' denied request: at most 2 keys, got 3" in err
    )
    err = _refused(kc, "create", manifest=configmap(f"tmp-{tag}", name, 1))
    assert f'configmaps "tmp-{tag}" is forbidden: ValidatingAdmissionPolicy' in err  # 403
    assert "denied request: failed expression: !object.metadata.name.startsWith('tmp-')" in err
    kc.run("apply", "-f", "-", input=configmap(f"small-{tag}", name, 2))
    err = _refused(kc, "apply", manifest=configmap(f"small-{tag}", name, 4))  # an update
    assert "at most 2 keys, got 4" in err
    kc.run("apply", "-f", "-", input=configmap(f"other-{tag}", "other", 5))  # not matched


def test_warn_comes_back_as_a_warning_header(kc: Kubectl) -> None:
    tag = kc.binary.name.replace(".", "-")
    name = f"warn-{tag}"
    kc.run("apply", "-f", "-", input=POLICY.format(name=name, actions="Warn"))
    proc = kc.run("apply", "-f", "-", input=configmap(f"warned-{tag}", name, 3))
    assert (
        f"Warning: Validation failed for ValidatingAdmissionPolicy '{name}' with binding "
        f"'{name}-binding': at most 2 keys, got 3" in proc.stderr
    )
    assert kc("get", "configmap", f"warned-{tag}", "-o", "jsonpath={.data.k2}") == "v"
