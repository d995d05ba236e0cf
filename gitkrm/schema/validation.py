"""Schema validation of built-in kinds with jsonschema-rs, and unknown-field detection.

One compiled validator per kind, built from the strict schemas (`additionalProperties:
false`), so a single `is_valid` call on the fast path proves both that the object is well
typed and that it has no unknown fields to prune. Only an invalid object pays for
`iter_errors`, which yields every cause; `additionalProperties` failures become unknown
field paths (Go structs drop such fields), the rest become `Cause`s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jsonschema_rs

from gitkrm.errors import Cause
from gitkrm.schema import fielderrors as fe
from gitkrm.schema.fastpath import with_overlays
from gitkrm.schema.openapi import JSON_SCHEMA_DIALECT, definitions

PathT = tuple[str | int, ...]

_JSON_TYPES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}

# IntOrString and Quantity are `oneOf` a string or a number, each nullable, so `null`
# matches both branches and fails `oneOf`; a plain type union says the same thing
# without that trap (and validates faster).
_OVERRIDES: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "type": ["string", "integer", "null"],
        "format": "int-or-string",
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": ["string", "number", "null"]},
}


_TYPE_ERRORS = frozenset({"Type", "OneOfNotValid", "OneOfMultipleValid", "AnyOf", "FalseSchema"})


def json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), "object")


@dataclass(slots=True)
class SchemaReport:
    """What validating one object found: causes and unknown fields.

    `mistyped` when a value has the wrong JSON type somewhere: the API server fails to
    decode such a body, so defaulting and the rules (which expect the right types) never
    run; the schema causes are the whole answer.
    """

    causes: list[Cause] = field(default_factory=list)
    unknown: list[PathT] = field(default_factory=list)
    mistyped: bool = False


@cache
def _strict_defs() -> dict[str, Any]:
    defs = dict(definitions(strict=True))
    defs.update(_OVERRIDES)
    return defs


def _compile(defs: dict[str, Any], definition: str) -> jsonschema_rs.Validator:
    schema = {"$schema": JSON_SCHEMA_DIALECT, "$defs": defs, "$ref": f"#/$defs/{definition}"}
    return jsonschema_rs.validator_for(schema, validate_formats=False)


@cache
def _validator(definition: str) -> jsonschema_rs.Validator:
    return _compile(_strict_defs(), definition)


@cache
def _fast_defs() -> dict[str, Any]:
    return with_overlays(_strict_defs())


@cache
def _fast_validator(definition: str) -> jsonschema_rs.Validator:
    return _compile(_fast_defs(), definition)


def compile_kind(definition: str) -> None:
    """Compile a kind's validators ahead of their first use (a few milliseconds)."""
    _validator(definition)
    _fast_validator(definition)


def fast_validator(definition: str) -> Callable[[object], bool]:
    """fast_valid of one definition, looked up once."""
    is_valid: Callable[[object], bool] = _fast_validator(definition).is_valid
    return is_valid


def fast_valid(definition: str, obj: object) -> bool:
    """True when `obj` is valid, has no unknown fields, and meets every API rule that the
    fast-path schema encodes (see fastpath.py); False says nothing about which."""
    result: bool = _fast_validator(definition).is_valid(obj)
    return result


def check(definition: str, obj: object) -> SchemaReport | None:
    """None when `obj` is valid and has no unknown fields; otherwise every finding."""
    v = _validator(definition)
    if v.is_valid(obj):
        return None
    return _report(v.iter_errors(obj))


def _report(errors: Iterator[jsonschema_rs.ValidationError]) -> SchemaReport:
    report = SchemaReport()
    for err in errors:
        where: PathT = tuple(err.instance_path)
        kind = err.kind
        name = type(kind).__name__
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
            report.unknown.extend((*where, key) for key in kind.unexpected)
            continue
        if name in _TYPE_ERRORS:
            report.mistyped = True
        report.causes.append(cause_for(err))
    return report


def cause_for(err: jsonschema_rs.ValidationError) -> Cause:
    """One jsonschema-rs error, worded as the API server words a schema failure.

    (`spec.replicas: Invalid value: "x": spec.replicas in body must be of type integer:
    "string"`, `spec.x: Required value`, `spec.y: Unsupported value: ...`.)
    """
    where: PathT = tuple(err.instance_path)
    name = type(err.kind).__name__
    info: dict[str, Any] = err.kind.as_dict()
    value = err.instance
    path = fe.path_of(where)
    shown = path or "<root>"
    if name == "Required":
        return fe.required(fe.join(path, str(info["property"])))
    if name == "Type":
        types = info.get("types") or [info.get("type", "?")]
        want = " or ".join(str(t) for t in types if t != "null")
        return fe.invalid(
            path, value, f'{shown} in body must be of type {want}: "{json_type(value)}"'
        )
    if name in ("Enum", "Constant"):
        options = info.get("options", [info.get("expected_value")])
        return fe.not_supported(path, value, [fe.plain(o) for o in options if o is not None])
    limit = info.get("limit")
    detail = _DETAILS.get(name)
    if name == "MaxLength" and isinstance(value, str):
        return fe.too_long(path, int(limit or 0))
    if name == "MaxItems":
        return fe.too_many(path, int(limit or 0))
    if detail is not None:
        return fe.invalid(
            path, value, f"{shown} in body " + detail.format_map({"limit": limit, **info})
        )
    return fe.invalid(path, value, str(err.message))


_DETAILS = {
    "Minimum": "should be greater than or equal to {limit}",
    "ExclusiveMinimum": "should be greater than {limit}",
    "Maximum": "should be less than or equal to {limit}",
    "ExclusiveMaximum": "should be less than {limit}",
    "MinLength": "should be at least {limit} chars long",
    "MaxLength": "should be at most {limit} chars long",
    "MinItems": "should have at least {limit} items",
    "MinProperties": "should have at least {limit} properties",
    "MaxProperties": "should have at most {limit} properties",
    "Pattern": "should match '{pattern}'",
    "Format": "must be of type {format}",
    "UniqueItems": "shouldn't contain duplicates",
    "MultipleOf": "should be a multiple of {multiple_of}",
}
