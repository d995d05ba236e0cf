"""The JSONPath subset CRD printer columns and scale paths use: `.a.b`, `['a.b']`, `[0]`,
`[*]` and filters `[?(@.type=="Ready")]` (with == and !=), evaluated as kubectl does."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from gitkrm.errors import BadRequest
from gitkrm.krm.types import JSONScalar

_NAME = re.compile(r"\.([^.\[\]]+)")
_BRACKET = re.compile(
    r"""\[(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|(-?\d+)|(\*)|\?\(@((?:\.[^.=!)\s]+)+)\s*(?:(==|!=)\s*(?:'([^']*)'|"([^"]*)"|(-?\d+(?:\.\d+)?)|(true|false)))?\s*\))\]"""
)


@dataclass(frozen=True, slots=True)
class _Step:
    kind: str  # field, index, all, filter
    key: str = ""
    index: int = 0
    path: tuple[str, ...] = ()
    op: str = ""
    value: JSONScalar = None  # what a filter compares with


@cache
def parse(path: str) -> tuple[_Step, ...]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    text = text.removeprefix("$")
    steps: list[_Step] = []
    pos = 0
    while pos < len(text):
        mt = _NAME.match(text, pos)
        if mt:
            steps.append(_Step("field", key=mt.group(1)))
            pos = mt.end()
            continue
        mt = _BRACKET.match(text, pos)
        if not mt:
            raise BadRequest(f"unsupported JSONPath {path!r} at {text[pos:]!r}")
        q1, q2, idx, star, fpath, op, s1, s2, number, boolean = mt.groups()
        if q1 is not None or q2 is not None:
            steps.append(_Step("field", key=(q1 if q1 is not None else q2 or "").replace("\\", "")))
        elif idx is not None:
            steps.append(_Step("index", index=int(idx)))
        elif star is not None:
            steps.append(_Step("all"))
        else:
            value: JSONScalar = None
            if s1 is not None or s2 is not None:
                value = s1 if s1 is not None else s2
            elif number is not None:
                value = float(number) if "." in number else int(number)
            elif boolean is not None:
                value = boolean == "true"
            steps.append(
                _Step("filter", path=tuple(fpath[1:].split(".")), op=op or "", value=value)
            )
        pos = mt.end()
    return tuple(steps)


def _get(value: object, path: tuple[str, ...]) -> object:
    for p in path:
        if not isinstance(value, Mapping) or p not in value:
            return _MISSING
        value = value[p]
    return value


_MISSING = object()


def _match(item: object, step: _Step) -> bool:
    v = _get(item, step.path)
    if not step.op:
        return v is not _MISSING
    equal = _equal(v, step.value)
    return equal if step.op == "==" else not equal


def _equal(v: object, want: JSONScalar) -> bool:
    if isinstance(want, bool) or isinstance(v, bool):
        return v is want
    if isinstance(want, str):
        return isinstance(v, str) and v == want
    return isinstance(v, int | float) and v == want


def find(obj: object, path: str) -> list[object]:
    """All values `path` selects in `obj`, in order."""
    current = [obj]
    for step in parse(path):
        nxt: list[object] = []
        for v in current:
            if step.kind == "field":
                if isinstance(v, Mapping) and step.key in v:
                    nxt.append(v[step.key])
            elif step.kind == "index":
                if isinstance(v, list) and -len(v) <= step.index < len(v):
                    nxt.append(v[step.index])
            elif step.kind == "all":
                if isinstance(v, list):
                    nxt.extend(v)
                elif isinstance(v, Mapping):
                    nxt.extend(v.values())
            elif isinstance(v, list):
                nxt.extend(i for i in v if _match(i, step))
        current = nxt
    return current


def go_text(value: object) -> str:
    """A value as Go's fmt.Print shows an unstructured value (what kubectl prints)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{go_text(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_text(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    return str(value)
