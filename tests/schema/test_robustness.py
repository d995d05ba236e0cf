"""Admission never crashes: any JSON value anywhere gives Invalid or BadRequest, or passes."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gitkrm.errors import BadRequest, Invalid
from gitkrm.krm.types import FieldValidation
from gitkrm.schema import Registry
from tests.schema.schema_objects import deployment, service
from tests.support.builders import crd

REGISTRY = Registry.builtin()
REGISTRY.register_crd(
    crd(
        "Gadget",
        spec={
            "size": {"type": "integer", "default": 1},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "inner": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            },
        },
        status_subresource=False,
    )
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 70000) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _replace(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    node = obj
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _extra_objects() -> list[dict[str, Any]]:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "a"}]}
            }
        },
    }
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        "stringData": {"a": "b"},
    }
    gadget = {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": "default", "labels": {"a": "b"}},
        "spec": {
            "size": 2,
            "tags": ["x"],
            "free": {"k": [1]},
            "inner": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
        },
    }
    return [job, secret, gadget]


BASES = [deployment(), service(), *_extra_objects()]


@settings(max_examples=300, deadline=None)
@given(
    base=st.sampled_from(range(len(BASES))),
    where=st.integers(min_value=0, max_value=10_000),
    value=JSON,
    mode=st.sampled_from(list(FieldValidation)),
    as_update=st.booleans(),
)
def test_admit_raises_only_api_errors(
    base: int, where: int, value: Any, mode: FieldValidation, as_update: bool
) -> None:
    obj = copy.deepcopy(BASES[base])
    paths = [p for p in _paths(obj) if p[0] not in ("apiVersion", "kind")]
    _replace(obj, paths[where % len(paths)], value)
    old = None
    if as_update:
        old = copy.deepcopy(BASES[base])
        REGISTRY.admit(old)
    with contextlib.suppress(Invalid, BadRequest):
        REGISTRY.admit(obj, old=old, field_validation=mode)
