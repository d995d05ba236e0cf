"""PatchMeta from OpenAPI components, JSON-schema $defs and inline structural schemas."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import BadRequest
from gitkrm.patch import (
    PatchMeta,
    apply_strategic_merge_patch,
    create_three_way_merge_patch,
)


def test_openapi_components_and_defs_layouts_agree() -> None:
    item = {
        "properties": {
            "name": {"type": "string"},
            "children": {
                "type": "array",
                "items": {"allOf": [{"$ref": "#/components/schemas/Item"}]},
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "name",
            },
        }
    }
    openapi = {"components": {"schemas": {"Item": item}}}
    defs_item = {
        "properties": {
            "name": {"type": ["string", "null"]},
            "children": {
                "type": ["array", "null"],
                "items": {"$ref": "/api/_definitions.json#/$defs/Item"},
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "name",
            },
        }
    }
    for meta in (
        PatchMeta.from_openapi(openapi, "Item"),
        PatchMeta.from_openapi(openapi["components"]["schemas"], "Item"),
        PatchMeta.from_openapi({"Item": defs_item}, "Item"),
    ):
        children = meta.field("children")
        assert children.strategy == "merge"
        assert children.merge_key is not None
        assert children.merge_key.names == ("name",)
        # recursive: the items are Items again, resolved lazily and shared
        assert children.sub.field("children").sub is children.sub


def test_unknown_schema_name_is_an_error() -> None:
    with pytest.raises(BadRequest, match="no schema named"):
        PatchMeta.from_openapi({}, "Nope")


def test_unknown_fields_have_no_metadata() -> None:
    meta = PatchMeta.from_openapi({"A": {"properties": {"x": {"type": "string"}}}}, "A")
    f = meta.field("notInSchema")
    assert f.strategy == ""
    assert f.merge_key is None
    assert f.sub.field("deeper").shape == "unknown"
    assert PatchMeta.empty().is_empty


def test_bad_strategy_is_reported_with_the_field() -> None:
    meta = PatchMeta.from_openapi(
        {"A": {"properties": {"x": {"type": "array", "x-kubernetes-patch-strategy": "a,b,c"}}}},
        "A",
    )
    with pytest.raises(BadRequest, match=r"x: unexpected patch strategy"):
        apply_strategic_merge_patch({"x": [1]}, {"x": [2]}, meta)


def crd_schema() -> dict[str, Any]:
    port = {
        "type": "object",
        "properties": {
            "port": {"type": "integer"},
            "protocol": {"type": "string", "default": "TCP"},
            "name": {"type": "string"},
        },
    }
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "ports": {
                        "type": "array",
                        "items": port,
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["port", "protocol"],
                    },
                    "hosts": {
                        "type": "array",
                        "items": {"type": "string"},
                        "x-kubernetes-list-type": "set",
                    },
                    "args": {"type": "array", "items": {"type": "string"}},
                    "selector": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "x-kubernetes-map-type": "atomic",
                    },
                    "limit": {
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "pattern": r"^([0-9.]+)(([KMGTPE]i)|[numkMGTPE])?$",
                        "x-kubernetes-int-or-string": True,
                    },
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        },
    }


def test_structural_schema_list_types() -> None:
    spec = PatchMeta.from_schema(crd_schema()).field("spec").sub
    ports = spec.field("ports")
    assert ports.strategy == "merge"
    assert ports.merge_key is not None
    assert ports.merge_key.names == ("port", "protocol")
    assert spec.field("hosts").strategy == "merge"
    assert spec.field("hosts").merge_key is None
    assert spec.field("args").strategy == ""
    assert spec.field("selector").strategy == "replace"
    assert spec.field("limit").quantity
    assert spec.field("free").shape == "unknown"


def test_multi_key_lists_keep_same_port_different_protocol_apart() -> None:
    meta = PatchMeta.from_schema(crd_schema())
    original = {"spec": {"ports": [{"port": 53, "protocol": "UDP"}]}}
    modified = {
        "spec": {"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}
    }
    current = {"spec": {"ports": [{"port": 53, "protocol": "UDP", "name": "dns"}]}}
    patch = create_three_way_merge_patch(original, modified, current, meta)
    result = apply_strategic_merge_patch(current, patch, meta)
    assert result["spec"]["ports"] == [
        {"port": 53, "protocol": "UDP", "name": "dns"},
        {"port": 53, "protocol": "TCP"},
    ]
    dropped = {"spec": {"ports": [{"port": 53, "protocol": "TCP"}]}}
    patch = create_three_way_merge_patch(modified, dropped, result, meta)
    assert apply_strategic_merge_patch(result, patch, meta)["spec"]["ports"] == [
        {"port": 53, "protocol": "TCP"}
    ]


def test_missing_secondary_key_takes_the_schema_default() -> None:
    meta = PatchMeta.from_schema(crd_schema())
    desired = {"spec": {"ports": [{"port": 80, "name": "http"}]}}
    live = {"spec": {"ports": [{"port": 80, "protocol": "TCP", "name": "web"}]}}
    patch = create_three_way_merge_patch(desired, desired, live, meta)
    result = apply_strategic_merge_patch(live, patch, meta)
    assert result["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "name": "http"}]


def test_atomic_map_and_set_lists() -> None:
    meta = PatchMeta.from_schema(crd_schema())
    original = {"spec": {"selector": {"a": "1"}, "hosts": ["x"]}}
    modified = {"spec": {"selector": {"b": "2"}, "hosts": ["x", "y"]}}
    current = {"spec": {"selector": {"a": "1", "other": "3"}, "hosts": ["x", "z"]}}
    result = apply_strategic_merge_patch(
        current, create_three_way_merge_patch(original, modified, current, meta), meta
    )
    assert result["spec"]["selector"] == {"b": "2"}
    assert sorted(result["spec"]["hosts"]) == ["x", "y", "z"]


def test_quantity_fields_in_crds_compare_by_amount() -> None:
    meta = PatchMeta.from_schema(crd_schema())
    desired = {"spec": {"limit": "1Gi"}}
    live = {"spec": {"limit": "1024Mi"}}
    assert create_three_way_merge_patch(desired, desired, live, meta) == {}
