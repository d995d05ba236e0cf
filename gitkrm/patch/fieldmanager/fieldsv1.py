"""FieldsV1: path elements as the API server writes them, and reading them back.

`f:<name>` for a field, `k:<json>` for an item of a keyed list (its key fields, sorted by
name, compact JSON), `v:<json>` for an item of a set, `i:<n>` for an index, `.` for "this
node itself". Values are written as Go's encoding/json writes them (sorted map keys,
`<`, `>`, `&`, U+2028 and U+2029 escaped), so the text matches a Kubernetes server's byte
for byte.
"""

from __future__ import annotations

import re

import orjson

from gitkrm.errors import BadRequest
from gitkrm.patch.fieldmanager.fieldpath import DOT, Tree, canonical

_GO_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def go_escape(text: str) -> str:
    """JSON text with the characters Go's encoding/json escapes in strings escaped (they
    occur nowhere else in JSON)."""
    if any(c in text for c in "<>&\u2028\u2029"):
        for raw, esc in _GO_ESCAPES:
            text = text.replace(raw, esc)
    return text


def go_json(v: object) -> str:
    """Compact JSON with Go's escaping and key order; integral floats print as integers."""
    return go_escape(orjson.dumps(_normalize(v), option=orjson.OPT_SORT_KEYS).decode())


def _normalize(v: object) -> object:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
        return int(v)
    if isinstance(v, list):
        return [_normalize(x) for x in v]
    if isinstance(v, dict):
        return {k: _normalize(x) for k, x in v.items()}
    return v


_SAFE = re.compile(r"[ !#-%'-;=?-\[\]-~]*")


def _scalar_json(v: object) -> str | None:
    """The Go JSON of a plain string or integer without a round trip, else None."""
    if type(v) is str:
        return '"' + v + '"' if _SAFE.fullmatch(v) else None
    if type(v) is int:
        return str(v)
    return None


def field_pe(name: str) -> str:
    return "f:" + name


def value_pe(v: object) -> str:
    text = _scalar_json(v)
    return "v:" + (text if text is not None else go_json(v))


def key_pe(names: tuple[str, ...], values: tuple[object, ...]) -> str:
    """The `k:` element of an item whose key fields `names` (sorted) hold `values`."""
    parts: list[str] = []
    for name, v in zip(names, values, strict=True):
        text = _scalar_json(v)
        if text is None or not _SAFE.fullmatch(name):
            return "k:" + go_json(dict(zip(names, values, strict=True)))
        parts.append('"' + name + '":' + text)
    return "k:{" + ",".join(parts) + "}"


def index_pe(i: int) -> str:
    return f"i:{i}"


def parse_fields_v1(raw: object, *, where: str = "fieldsV1") -> Tree:
    """A FieldsV1 value from a request, checked and put in canonical order.

    Unknown path element types are dropped (a newer server may know them), as SMD does;
    malformed ones are a BadRequest naming `where`.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise BadRequest(f"{where}: expected an object, got {type(raw).__name__}")
    return canonical(_parse(raw, where))


def _parse(raw: dict[str, object], where: str) -> Tree:
    out: Tree = {}
    for key, child in raw.items():
        if not isinstance(child, dict):
            raise BadRequest(f"{where}: the value of {key!r} must be an object")
        if key == DOT:
            if raw.keys() != {DOT}:
                out[DOT] = {}
            continue
        if len(key) < 2 or key[1] != ":":
            raise BadRequest(f"{where}: path element {key!r}: missing colon")
        kind = key[0]
        if kind == "f":
            pe = key
        elif kind in "kv":
            try:
                value = orjson.loads(key[2:])
            except orjson.JSONDecodeError as e:
                raise BadRequest(f"{where}: path element {key!r}: {e}") from None
            if kind == "k":
                if not isinstance(value, dict):
                    raise BadRequest(f"{where}: path element {key!r}: expected an object")
                names = tuple(sorted(value))
                pe = key_pe(names, tuple(value[n] for n in names))
            else:
                pe = value_pe(value)
        elif kind == "i":
            try:
                pe = index_pe(int(key[2:]))
            except ValueError:
                raise BadRequest(f"{where}: path element {key!r}: not an index") from None
        else:
            continue  # an element type this version does not know: dropped, as SMD does
        sub = _parse(child, f"{where}[{key}]") if child else {}
        if sub.keys() == {DOT}:
            sub = {}
        out[pe] = sub
    return out
