"""Structural schemas: conversion to JSON Schema, pruning and defaulting on plain dicts."""

from __future__ import annotations

from typing import Any

import jsonschema_rs

from gitkrm.schema.structural import apply_defaults, has_defaults, prune, to_json_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "nullable": True},
                "count": {"type": "integer", "minimum": 1, "exclusiveMinimum": True},
                "mode": {"type": "string", "enum": ["a", "b"], "nullable": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "weight": {"type": "integer", "default": 1},
                        },
                    },
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "port": {"x-kubernetes-int-or-string": True},
            },
        }
    },
}


def _valid(obj: Any) -> bool:
    result: bool = jsonschema_rs.validator_for(to_json_schema(SCHEMA)).is_valid(obj)
    return result


def test_nullable_and_enum() -> None:
    assert _valid({"spec": {"name": None, "mode": None}})
    assert not _valid({"spec": {"mode": "c"}})


def test_exclusive_minimum_boolean_form() -> None:
    assert _valid({"spec": {"count": 2}})
    assert not _valid({"spec": {"count": 1}})


def test_int_or_string() -> None:
    assert _valid({"spec": {"port": 80}})
    assert _valid({"spec": {"port": "http"}})
    assert not _valid({"spec": {"port": 1.5}})


def test_root_accepts_type_meta_and_metadata() -> None:
    assert _valid({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"}})
    assert not _valid({"kind": 3})


def test_prune_reports_paths_and_keeps_maps_and_preserved_fields() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "a", "junk": 1},
        "spec": {
            "labels": {"any": "thing"},
            "items": [{"id": "a", "extra": True}],
            "free": {"whatever": {"deep": 1}},
            "bogus": 2,
        },
        "status": {},
    }
    found = prune(obj, SCHEMA)
    assert sorted(found, key=str) == sorted(
        [("metadata", "junk"), ("spec", "items", 0, "extra"), ("spec", "bogus"), ("status",)],
        key=str,
    )
    assert obj["spec"]["labels"] == {"any": "thing"}
    assert obj["spec"]["free"] == {"whatever": {"deep": 1}}
    assert obj["metadata"] == {"name": "a"}


def test_prune_drops_nulls_of_non_nullable_fields_silently() -> None:
    obj: dict[str, Any] = {"spec": {"name": None, "count": None}}
    assert prune(obj, SCHEMA) == []
    assert obj == {"spec": {"name": None}}


def test_defaults_in_list_items_are_copies() -> None:
    obj: dict[str, Any] = {"spec": {"items": [{"id": "a"}, {"id": "b", "weight": 5}]}}
    assert has_defaults(SCHEMA)
    apply_defaults(obj, SCHEMA)
    assert obj["spec"]["items"] == [{"id": "a", "weight": 1}, {"id": "b", "weight": 5}]


def test_object_default_is_deep_copied() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"conf": {"type": "object", "default": {"a": [1]}}},
    }
    first: dict[str, Any] = {}
    second: dict[str, Any] = {}
    apply_defaults(first, schema)
    apply_defaults(second, schema)
    first["conf"]["a"].append(2)
    assert second["conf"] == {"a": [1]}
    assert schema["properties"]["conf"]["default"] == {"a": [1]}
