"""The fast path may skip a Python rule only when its schema encodes that rule.

Property: whenever the fast-path schema accepts an object, the reduced rule set finds
exactly what the full rule set finds (after defaulting, as admission runs them).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gitkrm.schema.defaults import apply_defaults
from gitkrm.schema.rules import validate_rules
from gitkrm.schema.validation import fast_valid
from tests.schema.schema_objects import deployment, service

NAMES = st.text(alphabet="abz09-_.A/ ", min_size=0, max_size=20)
NUMBERS = st.one_of(
    st.integers(min_value=-3, max_value=3),
    st.integers(min_value=65530, max_value=65540),
    st.integers(min_value=-(2**31), max_value=2**31),
)
QUANTITIES = st.one_of(
    st.sampled_from(["100m", "1", "0", "-1", "1Gi", "1.5", ".5", "1e3", "1x", "", "+1", "2Ki"]),
    st.integers(min_value=-2, max_value=4),
)
PORT_NAMES = st.one_of(st.sampled_from(["http", "web", "a", "x1", "Http", "a--b", "-a"]), NAMES)
PORT_NUMBERS = st.one_of(st.sampled_from([80, 443, 8080]), NUMBERS)
ENUMS = st.sampled_from(["Always", "IfNotPresent", "Never", "OnFailure", "", "TCP", "ICMP"])


def _container_mutation(c: dict[str, Any], choice: int, text: str, number: int, q: Any) -> None:
    port = c["ports"][0]
    if choice == 0:
        c["name"] = text
    elif choice == 1:
        c["image"] = text
    elif choice == 2:
        port["containerPort"] = number
    elif choice == 3:
        port["name"] = text
    elif choice == 4:
        c["ports"].append({"containerPort": 81, "name": text})
    elif choice == 5:
        port["hostPort"] = number
    elif choice == 6:
        c.setdefault("resources", {}).setdefault("requests", {})["cpu"] = q
    elif choice == 7:
        c.setdefault("resources", {})["limits"] = {"cpu": q}
    elif choice == 8:
        c["env"] = [{"name": text, "value": "x"}]
    elif choice == 9:
        c["volumeMounts"] = [{"name": text, "mountPath": "/" + text}]


def _pod_mutation(obj: dict[str, Any], choice: int, text: str, number: int, enum: str) -> None:
    spec = obj["spec"]["template"]["spec"]
    if choice == 0:
        spec["restartPolicy"] = enum
    elif choice == 1:
        spec["volumes"] = [{"name": text, "emptyDir": {}}]
    elif choice == 2:
        spec["containers"].append({"name": text, "image": "x"})
    elif choice == 3:
        spec["initContainers"] = [{"name": text, "image": "x"}]
    elif choice == 4:
        obj["spec"]["template"]["metadata"]["labels"][text] = text
    elif choice == 5:
        obj["spec"]["replicas"] = number
    elif choice == 6:
        spec["terminationGracePeriodSeconds"] = number
    elif choice == 7:
        spec["containers"][0]["imagePullPolicy"] = enum
    elif choice == 8:
        obj["spec"]["selector"]["matchLabels"][text] = "v"
        obj["spec"]["template"]["metadata"]["labels"][text] = "v"
    elif choice == 9:
        spec["containers"][0].setdefault("resources", {})["limits"] = {text: "1"}


def _same_findings(obj: dict[str, Any], *, group: str, kind: str, definition: str) -> bool:
    if not fast_valid(definition, obj):
        return False
    apply_defaults(obj, group=group, kind=kind, create=True)
    full = validate_rules(copy.deepcopy(obj), group=group, kind=kind, fast=False)
    reduced = validate_rules(obj, group=group, kind=kind, fast=True)
    assert sorted(map(str, reduced)) == sorted(map(str, full))
    return True


@settings(max_examples=200, deadline=None)
@given(
    mutations=st.lists(
        st.tuples(st.integers(0, 19), NAMES, NUMBERS, QUANTITIES, ENUMS), min_size=1, max_size=4
    )
)
def test_deployment_fast_rules_match_full_rules(
    mutations: list[tuple[int, str, int, Any, str]],
) -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    for choice, text, number, q, enum in mutations:
        if choice < 10:
            _container_mutation(
                obj["spec"]["template"]["spec"]["containers"][0], choice, text, number, q
            )
        else:
            _pod_mutation(obj, choice - 10, text, number, enum)
    _same_findings(obj, group="apps", kind="Deployment", definition="io.k8s.api.apps.v1.Deployment")


@settings(max_examples=150, deadline=None)
@given(
    ports=st.lists(
        st.fixed_dictionaries(
            {"port": PORT_NUMBERS},
            optional={
                "name": PORT_NAMES,
                "targetPort": st.one_of(PORT_NUMBERS, PORT_NAMES),
                "nodePort": st.one_of(st.just(30080), NUMBERS),
                "protocol": ENUMS,
            },
        ),
        max_size=3,
    ),
    service_type=st.sampled_from(["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"]),
)
def test_service_fast_rules_match_full_rules(
    ports: list[dict[str, Any]], service_type: str
) -> None:
    obj = service(ports=ports, type=service_type)
    _same_findings(obj, group="", kind="Service", definition="io.k8s.api.core.v1.Service")


def test_the_valid_workload_takes_the_fast_path() -> None:
    assert fast_valid("io.k8s.api.apps.v1.Deployment", deployment())
    assert fast_valid("io.k8s.api.core.v1.Service", service())


def test_rule_violations_leave_the_fast_path() -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = 70000
    assert not fast_valid("io.k8s.api.apps.v1.Deployment", obj)
    obj = deployment()
    obj["spec"]["template"]["metadata"]["labels"]["bad key"] = "x"
    assert not fast_valid("io.k8s.api.apps.v1.Deployment", obj)
