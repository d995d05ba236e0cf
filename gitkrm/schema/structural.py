"""Structural schemas of custom resources: pruning, defaulting and conversion to JSON Schema.

A CRD version's `openAPIV3Schema` is OpenAPI 3.0 with Kubernetes extensions. The API
server, before validating a custom resource, prunes fields the schema does not specify
(unless `x-kubernetes-preserve-unknown-fields`), drops nulls of non-nullable fields, and
applies `default`s; then it validates. This module does those steps on plain dicts, and
converts the schema into a JSON Schema (draft 2020-12) that jsonschema-rs compiles.
"""

from __future__ import annotations

import copy
from typing import Any

from gitkrm.schema.openapi import definitions

Schema = dict[str, Any]
PathT = tuple[str | int, ...]

_META_FIELDS_DEF = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_PASSTHROUGH = (
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
    "minProperties",
    "maxProperties",
    "required",
)


def object_meta_fields() -> frozenset[str]:
    """The fields of ObjectMeta: everything else in a custom resource's metadata is pruned."""
    return frozenset(definitions()[_META_FIELDS_DEF]["properties"])


# ---- conversion to JSON Schema ----


def to_json_schema(schema: Schema, *, root: bool = True) -> Schema:
    """A JSON Schema (2020-12) with the meaning of a structural OpenAPI v3 schema.

    Unknown fields are pruned before validation, so no `additionalProperties: false` is
    added; `nullable` becomes a `null` type; `x-kubernetes-int-or-string` an integer-or-
    string type; embedded resources require `apiVersion` and `kind`. At the root,
    `apiVersion`, `kind` and `metadata` are always strings / objects as for any object.
    """
    out: Schema = {}
    if root:
        out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    typ = schema.get("type")
    nullable = schema.get("nullable") is True
    if schema.get("x-kubernetes-int-or-string") is True:
        out["type"] = ["integer", "string", "null"] if nullable else ["integer", "string"]
    elif isinstance(typ, str) and typ:
        json_type = "number" if typ == "number" else typ
        out["type"] = [json_type, "null"] if nullable else json_type
    for key in _PASSTHROUGH:
        if key in schema:
            out[key] = schema[key]
    if "enum" in out and nullable:
        out["enum"] = [*out["enum"], None]
    if schema.get("exclusiveMinimum") is True and "minimum" in schema:
        out["exclusiveMinimum"] = schema["minimum"]
        out.pop("minimum", None)
    if schema.get("exclusiveMaximum") is True and "maximum" in schema:
        out["exclusiveMaximum"] = schema["maximum"]
        out.pop("maximum", None)
    if "format" in schema:
        out["format"] = schema["format"]
    props = schema.get("properties")
    if isinstance(props, dict):
        out["properties"] = {k: to_json_schema(v, root=False) for k, v in props.items()}
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = to_json_schema(extra, root=False)
    items = schema.get("items")
    if isinstance(items, dict):
        out["items"] = to_json_schema(items, root=False)
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    for key in ("allOf", "anyOf", "oneOf"):
        subs = schema.get(key)
        if int_or_string and isinstance(subs, list) and all(_only_type(s) for s in subs):
            continue  # the usual `anyOf: [{type: integer}, {type: string}]`: said above
        if isinstance(subs, list):
            out[key] = [to_json_schema(s, root=False) for s in subs if isinstance(s, dict)]
    negated = schema.get("not")
    if isinstance(negated, dict):
        out["not"] = to_json_schema(negated, root=False)
    if schema.get("x-kubernetes-embedded-resource") is True:
        embedded = dict(out.get("properties") or {})
        embedded.setdefault("apiVersion", {"type": "string"})
        embedded.setdefault("kind", {"type": "string"})
        embedded.setdefault("metadata", {"type": "object"})
        out["properties"] = embedded
        out["required"] = sorted({*out.get("required", ()), "apiVersion", "kind"})
    if root:
        root_props = dict(out.get("properties") or {})
        root_props["apiVersion"] = {"type": "string"}
        root_props["kind"] = {"type": "string"}
        root_props["metadata"] = {"type": "object"}
        out["properties"] = root_props
        out.setdefault("type", "object")
    return out


def _only_type(schema: object) -> bool:
    return isinstance(schema, dict) and set(schema) <= {"type"}


# ---- pruning ----


def prune(obj: object, schema: Schema, *, root: bool = True) -> list[PathT]:
    """Remove fields the structural schema does not specify; return their paths.

    Respects `x-kubernetes-preserve-unknown-fields`, maps (`additionalProperties`), and
    embedded resources (whose `apiVersion`, `kind` and `metadata` are kept, the metadata
    pruned to ObjectMeta). Nulls of non-nullable fields are removed as the API server
    does before defaulting, without being reported.
    """
    found: list[PathT] = []
    _prune(obj, schema, (), found, root=root)
    return found


def _prune(obj: object, schema: Schema, path: PathT, found: list[PathT], *, root: bool) -> None:
    if isinstance(obj, dict):
        _prune_object(obj, schema, path, found, root=root)
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(obj):
                _prune(item, items, (*path, i), found, root=False)


def _prune_object(
    obj: dict[str, object], schema: Schema, path: PathT, found: list[PathT], *, root: bool
) -> None:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    extra = schema.get("additionalProperties")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = root or schema.get("x-kubernetes-embedded-resource") is True
    for key in list(obj):
        value = obj[key]
        sub = props.get(key)
        if sub is None and isinstance(extra, dict):
            sub = extra
        if embedded and key in ("apiVersion", "kind") and sub is None:
            continue
        if embedded and key == "metadata":
            if isinstance(value, dict):
                allowed = object_meta_fields()
                for mkey in [k for k in value if k not in allowed]:
                    del value[mkey]
                    found.append((*path, key, mkey))
            continue
        if sub is None:
            if extra is True or preserve:
                continue
            del obj[key]
            found.append((*path, key))
            continue
        if value is None and sub.get("nullable") is not True:
            del obj[key]
            continue
        _prune(value, sub, (*path, key), found, root=False)


# ---- defaulting ----


def apply_defaults(obj: object, schema: Schema) -> None:
    """Set every absent property that has a `default` (deep-copied), recursively."""
    if isinstance(obj, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                if not isinstance(sub, dict):
                    continue
                if key not in obj and "default" in sub:
                    obj[key] = copy.deepcopy(sub["default"])
                if key in obj:
                    apply_defaults(obj[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, value in obj.items():
                if not (isinstance(props, dict) and key in props):
                    apply_defaults(value, extra)
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in obj:
                apply_defaults(item, items)


def has_defaults(schema: object) -> bool:
    """Whether any node of the schema carries a `default` (skip the walk when none does)."""
    if isinstance(schema, dict):
        if "default" in schema:
            return True
        return any(has_defaults(v) for k, v in schema.items() if k != "enum")
    if isinstance(schema, list):
        return any(has_defaults(v) for v in schema)
    return False
