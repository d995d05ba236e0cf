"""`/openapi/v2` (Swagger 2.0) for kubectl 1.27-1.29, which read it, as protobuf
(gnostic's openapi_v2.Document), before validating or patching.

Only `definitions` are sent (with their x-kubernetes-* extensions, which kubectl uses to
find a kind's schema and its strategic-merge keys); operations are described by
`/openapi/v3`, which those kubectl versions use to see that the server validates fields.
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any, Final

import orjson
import yaml

from gitkrm.schema import RELEASE, Registry, ResourceInfo
from gitkrm.schema.openapi import definitions
from gitkrm.server.openapi_schema import custom_schemas
from gitkrm.server.pbwire import Writer

PROTOBUF: Final = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_DEFS: Final = "#/$defs/"
_V3_REFS: Final = "#/components/schemas/"
_V2_REFS: Final = "#/definitions/"


def _yaml(value: Any) -> Writer:
    any_ = Writer()
    any_.string(2, yaml.safe_dump(value, default_flow_style=True, width=1 << 30).strip())
    return any_


def _types(schema: dict[str, Any]) -> list[str]:
    t = schema.get("type")
    if isinstance(t, list):
        return [x for x in t if x != "null"]
    if isinstance(t, str):
        return [t]
    one_of = schema.get("oneOf")
    if isinstance(one_of, list):  # IntOrString and Quantity: strings on the wire
        inner = {x for s in one_of if isinstance(s, dict) for x in _types(s)}
        if "string" in inner:
            return ["string"]
    return []


def _ref(value: str) -> str:
    for prefix in (_DEFS, _V3_REFS):
        if value.startswith(prefix):
            return _V2_REFS + value[len(prefix) :]
    return value


def schema_message(schema: Any) -> Writer:
    """One JSON Schema node as a gnostic openapi_v2.Schema."""
    w = Writer()
    if not isinstance(schema, dict):
        return w
    ref = schema.get("$ref")
    if isinstance(ref, str):
        w.string(1, _ref(ref))
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        w.string(1, _ref(all_of[0]["$ref"]))  # an OpenAPI v3 reference with siblings
        all_of = None
    fmt = schema.get("format")
    if isinstance(fmt, str):
        w.string(2, fmt)
    elif "oneOf" in schema and "integer" in str(schema["oneOf"]):
        w.string(2, "int-or-string")
    if isinstance(schema.get("description"), str):
        w.string(4, schema["description"])
    if "default" in schema:
        w.message(5, _yaml(schema["default"]))
    for key, num in (("maximum", 7), ("minimum", 9)):
        if isinstance(schema.get(key), int | float):
            w.double(num, float(schema[key]))
    for key, num in (
        ("maxLength", 11),
        ("minLength", 12),
        ("maxItems", 14),
        ("minItems", 15),
        ("maxProperties", 17),
        ("minProperties", 18),
    ):
        if isinstance(schema.get(key), int):
            w.varint(num, schema[key])
    if isinstance(schema.get("pattern"), str):
        w.string(13, schema["pattern"])
    if schema.get("uniqueItems") is True:
        w.boolean(16, True)
    for r in schema.get("required") or ():
        w.string(19, str(r))
    for e in schema.get("enum") or ():
        if e is not None:
            w.message(20, _yaml(e))
    ap = schema.get("additionalProperties")
    if isinstance(ap, dict):
        item = Writer()
        item.message(1, schema_message(ap))
        w.message(21, item)
    elif isinstance(ap, bool):
        item = Writer()
        item.boolean(2, ap)
        if not ap:
            item.buf += b"\x10\x00"
        w.message(21, item)
    types = _types(schema)
    if types:
        t = Writer()
        for x in types:
            t.string(1, x)
        w.message(22, t)
    items = schema.get("items")
    if isinstance(items, dict):
        it = Writer()
        it.message(1, schema_message(items))
        w.message(23, it)
    for sub in all_of or ():
        w.message(24, schema_message(sub))
    props = schema.get("properties")
    if isinstance(props, dict):
        p = Writer()
        for name, sub in props.items():
            named = Writer()
            named.string(1, name)
            named.message(2, schema_message(sub))
            p.message(1, named)
        w.message(25, p)
    for key, value in schema.items():
        if key.startswith("x-kubernetes-"):
            named = Writer()
            named.string(1, key)
            named.message(2, _yaml(value))
            w.message(31, named)
    return w


def _named_schema(name: str, schema: Any) -> bytes:
    named = Writer()
    named.string(1, name)
    named.message(2, schema_message(schema))
    outer = Writer()
    outer.message(1, named)  # one Definitions.additional_properties entry
    return bytes(outer.buf)


@cache
def _builtin_definitions() -> bytes:
    """The encoded Definitions entries of every built-in schema (built once per process)."""
    return b"".join(_named_schema(n, s) for n, s in sorted(definitions().items()))


class OpenAPIv2:
    """The v2 document of one registry: built-in definitions plus those of CRDs."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._key: tuple[Any, ...] | None = None
        self._doc = b""
        self._etag = ""

    def _customs(self) -> list[tuple[ResourceInfo, dict[str, Any] | None]]:
        """The custom kinds served and their schemas."""
        return [
            (i, self._registry.custom_schema(i.gvk)) for i in self._registry.infos() if i.custom
        ]

    def document(self) -> tuple[bytes, str]:
        customs = self._customs()
        key = tuple((i, id(s)) for i, s in customs)
        if key != self._key:
            defs = bytearray(_builtin_definitions())
            for info, schema in customs:
                if schema is not None:
                    for name, s in custom_schemas(info, schema).items():
                        defs += _named_schema(name, s)
            doc = Writer()
            doc.string(1, "2.0")
            info_msg = Writer()
            info_msg.string(1, "Kubernetes")
            info_msg.string(2, f"v{RELEASE}.0")
            doc.message(2, info_msg)
            doc.raw(8, b"")  # no paths
            doc.raw(9, defs)
            self._doc = bytes(doc.buf)
            self._etag = hashlib.sha512(self._doc).hexdigest()[:32].upper()
            self._key = key
        return self._doc, self._etag

    def json_document(self) -> bytes:
        """The same definitions as Swagger 2.0 JSON (for clients that do not ask for
        protobuf)."""
        defs: dict[str, Any] = {n: _json_schema(s) for n, s in sorted(definitions().items())}
        for info, schema in self._customs():
            if schema is not None:
                named = custom_schemas(info, schema)
                defs.update({n: _json_schema(s) for n, s in named.items()})
        return orjson.dumps(
            {
                "swagger": "2.0",
                "info": {"title": "Kubernetes", "version": f"v{RELEASE}.0"},
                "paths": {},
                "definitions": defs,
            }
        )


def _json_schema(schema: Any) -> Any:
    """A JSON Schema node in Swagger 2.0 form (refs to #/definitions, one type)."""
    if isinstance(schema, list):
        return [_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = _ref(value)
        elif key == "type":
            types = _types(schema)
            if types:
                out["type"] = types[0]
        elif key == "oneOf":
            types = _types(schema)
            if types:
                out["type"] = types[0]
                if "integer" in str(value):
                    out["format"] = "int-or-string"
        elif key in ("properties", "patternProperties") and isinstance(value, dict):
            out[key] = {k: _json_schema(v) for k, v in value.items()}
        elif key == "allOf" and isinstance(value, list) and len(value) == 1:
            out["$ref"] = _ref(value[0].get("$ref", ""))
        elif isinstance(value, dict | list) and key in ("items", "additionalProperties", "allOf"):
            out[key] = _json_schema(value)
        else:
            out[key] = value
    return out
