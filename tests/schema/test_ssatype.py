"""ssa_type_for: built-in kinds from the release schemas, CRDs from their schema, and
unknown kinds deduced."""

from __future__ import annotations

from gitkrm.krm import GVK
from gitkrm.patch.fieldmanager import fields_of
from gitkrm.patch.fieldmanager.typed import DEDUCED, LIST, LIST_MAP, LIST_SET, MAP
from gitkrm.schema import Registry, ssa_type_for
from tests.support import builders

DEPLOYMENT = GVK(group="apps", version="v1", kind="Deployment")


def test_builtin_list_types_come_from_the_schema() -> None:
    typ = ssa_type_for(DEPLOYMENT)
    assert typ is ssa_type_for(DEPLOYMENT)
    pod = typ.field("spec")[0].field("template")[0].field("spec")[0]
    containers = pod.field("containers")[0]
    assert (containers.kind, containers.list_type, containers.keys) == (LIST, LIST_MAP, ("name",))
    ports = containers.elem.field("ports")[0]
    assert ports.keys == ("containerPort", "protocol")
    assert ports.key_defaults == (ports.key_defaults[0], "TCP")
    md = typ.field("metadata")[0]
    assert md.field("finalizers")[0].list_type == LIST_SET
    assert md.field("labels")[0].kind == MAP
    assert not md.field("labels")[0].atomic
    assert typ.field("spec")[0].field("selector")[0].atomic


def test_unknown_kind_is_deduced() -> None:
    typ = ssa_type_for(GVK(group="example.com", version="v1", kind="Nope"))
    assert typ.kind == DEDUCED
    obj = {"apiVersion": "example.com/v1", "kind": "Nope", "spec": {"a": [1], "b": {"c": 1}}}
    assert fields_of(obj, typ=typ) == {"f:spec": {".": {}, "f:a": {}, "f:b": {".": {}, "f:c": {}}}}


def test_crd_schema_is_used() -> None:
    registry = Registry.builtin()
    crd = builders.crd(
        spec={
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "raw": {"type": "array", "items": {"type": "string"}},
        },
        status_subresource=False,
    )
    registry.register_crd(crd)
    typ = ssa_type_for(GVK(group="example.com", version="v1", kind="Widget"), registry=registry)
    spec = typ.field("spec")[0]
    assert spec.field("tags")[0].list_type == LIST_SET
    assert spec.field("raw")[0].is_leaf
