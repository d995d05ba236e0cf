"""CRD x-kubernetes-validations through Registry.admit: rules on random objects (Hypothesis)
against the same predicate in Python, transition rules, optionalOldSelf, list correlation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitkrm.errors import Invalid
from gitkrm.schema import Registry
from tests.support import builders

RULES = [
    {"rule": "self.min <= self.max", "message": "min above max"},
    {"rule": "self.name.startsWith('app-') && size(self.name) <= 12", "fieldPath": ".name"},
    {"rule": "self.ports.all(p, p.port > 0 && p.port < 65536)", "reason": "FieldValueForbidden"},
]


def crd(rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    spec_schema: dict[str, Any] = {
        "type": "object",
        "x-kubernetes-validations": rules,
        "properties": {
            "min": {"type": "integer"},
            "max": {"type": "integer"},
            "name": {"type": "string"},
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "port": {"type": "integer"},
                    },
                    **extra,
                },
            },
        },
    }
    return builders.crd(
        "Thing",
        "cel.example.com",
        schema={"type": "object", "properties": {"spec": spec_schema}},
        status_subresource=False,
    )


def thing(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cel.example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": spec,
    }


@pytest.fixture(scope="module")
def registry() -> Registry:
    r = Registry.builtin()
    r.register_crd(crd(RULES))
    return r


def failures(
    registry: Registry, obj: dict[str, Any], old: dict[str, Any] | None = None
) -> list[str]:
    try:
        registry.admit(obj, old=old)
    except Invalid as e:
        details = e.details
    else:
        return []
    assert details is not None
    return [str(c) for c in details.causes]


ports = st.lists(
    st.builds(
        lambda i, p: {"name": f"p{i}", "port": p}, st.integers(0, 50), st.integers(-5, 70000)
    ),
    max_size=4,
    unique_by=lambda p: p["name"],
)


@settings(max_examples=150, deadline=None)
@given(
    lo=st.integers(-(2**40), 2**40),
    hi=st.integers(-(2**40), 2**40),
    name=st.text(alphabet="ap-x1", max_size=16),
    ps=ports,
)
def test_rules_agree_with_python_on_random_objects(
    registry: Registry, lo: int, hi: int, name: str, ps: list[dict[str, Any]]
) -> None:
    found = failures(registry, thing(min=lo, max=hi, name=name, ports=ps))
    expected = []
    if not lo <= hi:
        expected.append('spec: Invalid value: "object": min above max')
    if not (name.startswith("app-") and len(name) <= 12):
        expected.append(
            'spec.name: Invalid value: "object": failed rule: '
            "self.name.startsWith('app-') && size(self.name) <= 12"
        )
    if not all(0 < p["port"] < 65536 for p in ps):
        expected.append(
            "spec: Forbidden: failed rule: self.ports.all(p, p.port > 0 && p.port < 65536)"
        )
    assert found == expected


def test_a_missing_field_is_the_api_servers_no_such_key(registry: Registry) -> None:
    found = failures(registry, thing(min=1, name="app-1", ports=[]))
    assert found == [
        'spec: Invalid value: "object": no such key: max evaluating rule: min above max'
    ]


def test_transition_rules_follow_map_list_keys_and_optional_old_self() -> None:
    r = Registry.builtin()
    r.register_crd(
        crd(
            [{"rule": "!oldSelf.hasValue() || self.min >= oldSelf.value().min",
              "optionalOldSelf": True, "message": "min may only grow"}],
            **{"x-kubernetes-validations": [
                {"rule": "self.port == oldSelf.port", "message": "port fixed"}]},
        )
    )  # fmt: skip
    old = thing(min=2, ports=[{"name": "a", "port": 1}, {"name": "b", "port": 2}])
    assert failures(r, thing(min=2, ports=[{"name": "a", "port": 1}])) == []
    moved = thing(
        min=3, ports=[{"name": "b", "port": 2}, {"name": "a", "port": 1}, {"name": "c", "port": 9}]
    )
    assert failures(r, moved, old) == []  # correlated by key, not index; new items free
    changed = thing(min=1, ports=[{"name": "a", "port": 5}])
    assert failures(r, changed, old) == [
        'spec: Invalid value: "object": min may only grow',
        'spec.ports[0]: Invalid value: "object": port fixed',
    ]


def test_the_root_rule_sees_name_but_not_other_metadata() -> None:
    r = Registry.builtin()
    schema_crd = crd([])
    root = schema_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    root["x-kubernetes-validations"] = [
        {"rule": "self.metadata.name.startsWith('t') && !has(self.metadata.labels)"}
    ]
    r.register_crd(schema_crd)
    obj = thing(min=1, max=2)
    obj["metadata"]["labels"] = {"a": "b"}
    assert failures(r, obj) == []
