"""Builders for `Cause`s worded as k8s.io/apimachinery/pkg/util/validation/field does.

`field.Invalid(path, value, detail).ErrorBody()` is `Invalid value: <value>: <detail>`;
the API server puts that body in the StatusCause message and the path in its field.
Values print as Go's `%q` for strings and `%d` for numbers; other values print as JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import orjson

from gitkrm.errors import IMMUTABLE_MESSAGE, Cause

INVALID = "FieldValueInvalid"
REQUIRED = "FieldValueRequired"
DUPLICATE = "FieldValueDuplicate"
NOT_SUPPORTED = "FieldValueNotSupported"
FORBIDDEN = "FieldValueForbidden"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
NOT_FOUND = "FieldValueNotFound"


def show(value: object) -> str:
    """A value as the API server prints it in an error message."""
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return repr(value)


def invalid(path: str, value: object, detail: str) -> Cause:
    return Cause(type=INVALID, message=f"Invalid value: {show(value)}: {detail}", field=path)


def required(path: str, detail: str = "") -> Cause:
    msg = f"Required value: {detail}" if detail else "Required value"
    return Cause(type=REQUIRED, message=msg, field=path)


def duplicate(path: str, value: object) -> Cause:
    return Cause(type=DUPLICATE, message=f"Duplicate value: {show(value)}", field=path)


def not_supported(path: str, value: object, supported: Iterable[str]) -> Cause:
    quoted = ", ".join(show(s) for s in supported)
    return Cause(
        type=NOT_SUPPORTED,
        message=f"Unsupported value: {show(value)}: supported values: {quoted}",
        field=path,
    )


def forbidden(path: str, detail: str) -> Cause:
    return Cause(type=FORBIDDEN, message=f"Forbidden: {detail}", field=path)


def too_long(path: str, limit: int) -> Cause:
    return Cause(type=TOO_LONG, message=f"Too long: may not be more than {limit} bytes", field=path)


def immutable(path: str, value: object) -> Cause:
    return replace(invalid(path, value, IMMUTABLE_MESSAGE), immutable=True)


def forbidden_change(path: str, detail: str) -> Cause:
    """Forbidden because the field may not change (a delete and create could apply it)."""
    return replace(forbidden(path, detail), immutable=True)


def join(base: str, key: str | int) -> str:
    """Append a field or an index to a dotted path: `spec` + `ports` -> `spec.ports`."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    return f"{base}.{key}" if base else key


def path_of(parts: Iterable[str | int]) -> str:
    """A JSON-pointer-like sequence as a Kubernetes field path (`a.b[0].c`)."""
    out = ""
    for p in parts:
        out = join(out, p)
    return out


def too_many(path: str, limit: int) -> Cause:
    return Cause(type=TOO_MANY, message=f"Too many: must have at most {limit} items", field=path)


def plain(value: object) -> str:
    """A value without quotes (for lists of supported values, which `show` then quotes)."""
    return value if isinstance(value, str) else show(value)


def not_found(path: str, value: object) -> Cause:
    return Cause(type=NOT_FOUND, message=f"Not found: {show(value)}", field=path)
