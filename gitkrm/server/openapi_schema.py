"""Built-in and custom schemas as OpenAPI 3.0 `components.schemas` (what kubectl explain
and kubectl's field-validation check read).

The built-in definitions come from kubernetes-validate as JSON Schema (`"type": ["string",
"null"]`, `$ref: "#/$defs/..."`); they are turned into the OpenAPI 3.0 shape kube-apiserver
serves (`"type": "string"`, `allOf: [{$ref: "#/components/schemas/..."}]` beside a
description), once per process.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any, Final

from gitkrm.schema import ResourceInfo
from gitkrm.schema.openapi import definitions

REF_PREFIX: Final = "#/components/schemas/"
_DEFS_PREFIX: Final = "#/$defs/"
OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
# Referenced by every group-version's operations.
META_TYPES: Final = (
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
)
SCALE: Final = "io.k8s.api.autoscaling.v1.Scale"

_SCHEMA_MAPS: Final = ("properties", "patternProperties")
_SCHEMA_LISTS: Final = ("allOf", "anyOf", "oneOf")
_SCHEMA_ONE: Final = ("items", "additionalProperties", "not")


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": REF_PREFIX + name}


def convert(schema: Any, *, top: bool = False) -> Any:
    """One JSON Schema node in OpenAPI 3.0 form (a new structure; the input is shared)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    ref = schema.get("$ref")
    for key, value in schema.items():
        if key == "$ref":
            continue
        if key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if len(types) == 1:
                out["type"] = types[0]
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: convert(v) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [convert(v) for v in value]
        elif key in _SCHEMA_ONE and isinstance(value, dict):
            out[key] = convert(value)
        else:
            out[key] = value
    if top and "x-kubernetes-group-version-kind" in out:
        props = out.get("properties")
        if isinstance(props, dict):
            for k in ("apiVersion", "kind"):  # kubernetes-validate's additions, not kube's
                if isinstance(props.get(k), dict):
                    props[k] = {n: v for n, v in props[k].items() if n != "enum"}
    if isinstance(ref, str):
        target = _ref(ref.removeprefix(_DEFS_PREFIX))
        if not out:
            return target
        out["allOf"] = [target, *out.get("allOf", [])]
    return out


def _refs(schema: Any, found: set[str]) -> None:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
            found.add(ref[len(_DEFS_PREFIX) :])
        for v in schema.values():
            if isinstance(v, dict | list):
                _refs(v, found)
    elif isinstance(schema, list):
        for v in schema:
            _refs(v, found)


@cache
def _direct_refs(name: str) -> frozenset[str]:
    found: set[str] = set()
    _refs(definitions().get(name), found)
    return frozenset(found)


def closure(names: Iterable[str]) -> list[str]:
    """The definitions `names` need, transitively, sorted by name."""
    defs = definitions()
    seen: set[str] = set()
    todo = [n for n in names if n in defs]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(r for r in _direct_refs(n) if r not in seen and r in defs)
    return sorted(seen)


@cache
def converted(name: str) -> dict[str, Any]:
    """A built-in definition in OpenAPI 3.0 form (shared: never mutate it)."""
    out: dict[str, Any] = convert(definitions()[name], top=True)
    return out


def builtin_schemas(names: Iterable[str]) -> dict[str, Any]:
    """`components.schemas` for `names` and everything they reference."""
    return {n: converted(n) for n in closure(names)}


def _reverse_group(group: str) -> str:
    return ".".join(reversed(group.split(".")))


def custom_schema_name(group: str, version: str, kind: str) -> str:
    """kube-apiserver's name for a custom kind's schema: `com.example.v1.Widget`."""
    return f"{_reverse_group(group)}.{version}.{kind}"


def custom_schemas(info: ResourceInfo, schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of a custom kind and of its list, as kube-apiserver publishes them."""
    group, version, kind, list_kind = info.group, info.version, info.kind, info.list_kind
    defs = definitions()
    gvk = {"group": group, "version": version, "kind": kind}
    obj = dict(schema)
    props = dict(obj.get("properties") or {})
    props["apiVersion"] = {
        "type": "string",
        "description": defs[SCALE]["properties"]["apiVersion"]["description"],
    }
    props["kind"] = {
        "type": "string",
        "description": defs[SCALE]["properties"]["kind"]["description"],
    }
    props["metadata"] = {
        "allOf": [_ref(OBJECT_META)],
        "description": "Standard object's metadata. More info: "
        "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
        "#metadata",
    }
    obj["properties"] = props
    obj.setdefault("type", "object")
    obj["x-kubernetes-group-version-kind"] = [gvk]
    name = custom_schema_name(group, version, kind)
    lst = {
        "description": f"{list_kind} is a list of {kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": props["apiVersion"],
            "kind": props["kind"],
            "items": {"type": "array", "items": _ref(name)},
            "metadata": {"allOf": [_ref(LIST_META)]},
        },
        "x-kubernetes-group-version-kind": [{**gvk, "kind": list_kind}],
    }
    return {name: obj, custom_schema_name(group, version, list_kind): lst}
