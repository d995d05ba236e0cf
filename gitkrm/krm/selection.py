"""Selector requirements (`key op values`) and their validation, as apimachinery's.

Shared by the string parser (`label_parser`) and the selector type (`labels`). Messages
match apimachinery's NewRequirement, so errors read the same as from an API server.
Requirements also compile to plain tuples, which keeps `LabelSelector.matches` a tight
loop: it runs for every object of a list or watch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any, Final

from gitkrm.errors import BadRequest
from gitkrm.krm.names import is_qualified_name, is_valid_label_value


class Operator(StrEnum):
    """apimachinery `selection.Operator` values."""

    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    IN = "in"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    EXISTS = "exists"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


BINARY_OPERATORS: Final = "in, notin, =, ==, !=, gt, lt"
_INT64_RE = re.compile(r"[+-]?[0-9]+", re.ASCII)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_int64(text: object) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): no spaces, no underscores, int64 range."""
    if not isinstance(text, str) or not _INT64_RE.fullmatch(text):
        return None
    n = int(text)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def go_quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _go_strings(values: Sequence[str]) -> str:
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


def _aggregate(errs: Sequence[str]) -> str:
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `key op values` term. Build it with `Requirement.new`, which validates."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    @classmethod
    def new(cls, key: str, operator: Operator, values: Iterable[str] = ()) -> Requirement:
        """Validate as apimachinery's NewRequirement; values are kept sorted and unique."""
        vals = sorted(set(values))
        errs = _requirement_errors(key, operator, vals)
        if errs:
            raise BadRequest(_aggregate(errs))
        return cls(key=key, operator=operator, values=tuple(vals))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return match_compiled(compile_requirement(self), labels or {})

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        if op is Operator.EXISTS:
            return self.key
        vals = ",".join(sorted(self.values))
        if op is Operator.IN:
            return f"{self.key} in ({vals})"
        if op is Operator.NOT_IN:
            return f"{self.key} notin ({vals})"
        sym = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(op, op.value)
        return f"{self.key}{sym}{vals}"


def _requirement_errors(key: str, op: Operator, vals: Sequence[str]) -> list[str]:
    errs: list[str] = []
    if msgs := is_qualified_name(key):
        errs.append(f"key: Invalid value: {go_quote(key)}: {'; '.join(msgs)}")
    if op in (Operator.IN, Operator.NOT_IN):
        if not vals:
            errs.append(
                f"values: Invalid value: {_go_strings(vals)}: "
                "for 'in', 'notin' operators, values set can't be empty"
            )
    elif op in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS):
        if len(vals) != 1:
            errs.append(
                f"values: Invalid value: {_go_strings(vals)}: "
                "exact-match compatibility requires one single value"
            )
    elif op in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        if vals:
            errs.append(
                f"values: Invalid value: {_go_strings(vals)}: "
                "values set must be empty for exists and does not exist"
            )
    else:
        if len(vals) != 1:
            errs.append(
                f"values: Invalid value: {_go_strings(vals)}: "
                "for 'Gt', 'Lt' operators, exactly one value is required"
            )
        for i, v in enumerate(vals):
            if parse_int64(v) is None:
                errs.append(
                    f"values[{i}]: Invalid value: {go_quote(v)}: "
                    "for 'Gt', 'Lt' operators, the value must be an integer"
                )
    for i, v in enumerate(vals):
        if msgs := is_valid_label_value(v):
            errs.append(f"values[{i}][{key}]: Invalid value: {go_quote(v)}: {'; '.join(msgs)}")
    return errs


class Code(IntEnum):
    """How a compiled requirement `(key, code, payload)` tests a label value."""

    IN = 0
    NOT_IN = 1
    EXISTS = 2
    NOT_EXISTS = 3
    GT = 4
    LT = 5


MISSING: Final = object()
Compiled = tuple[str, Code, Any]


def compile_requirement(r: Requirement) -> Compiled:
    op = r.operator
    if op in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
        return (r.key, Code.IN, frozenset(r.values))
    if op in (Operator.NOT_IN, Operator.NOT_EQUALS):
        return (r.key, Code.NOT_IN, frozenset(r.values))
    if op is Operator.EXISTS:
        return (r.key, Code.EXISTS, None)
    if op is Operator.DOES_NOT_EXIST:
        return (r.key, Code.NOT_EXISTS, None)
    bound = parse_int64(r.values[0]) if len(r.values) == 1 else None
    return (r.key, Code.GT if op is Operator.GREATER_THAN else Code.LT, bound)


def match_compiled(c: Compiled, labels: Mapping[str, str]) -> bool:
    key, code, payload = c
    v = labels.get(key, MISSING)
    if code is Code.IN:
        return v in payload
    if code is Code.NOT_IN:
        return v not in payload
    if code is Code.EXISTS:
        return v is not MISSING
    if code is Code.NOT_EXISTS:
        return v is MISSING
    n = parse_int64(v)
    bound: int | None = payload
    if n is None or bound is None:
        return False
    return n > bound if code is Code.GT else n < bound
