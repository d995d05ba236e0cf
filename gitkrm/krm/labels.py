"""Label selectors: the `labelSelector=` string form and the structured `matchLabels` form.

The string grammar, error messages and matching rules follow apimachinery's
`labels.Parse` (pkg/labels/selector.go) so that a selector accepted or rejected by
kubectl here is accepted or rejected the same way by a real API server. Matching runs
for every object of a list or watch, so a selector compiles its requirements once into
plain tuples and `matches` is a tight loop over them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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


_BINARY_OPERATORS: Final = "in, notin, =, ==, !=, gt, lt"
_INT64_RE = re.compile(r"[+-]?[0-9]+", re.ASCII)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _parse_int64(text: Any) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): no spaces, no underscores, int64 range."""
    if not isinstance(text, str) or not _INT64_RE.fullmatch(text):
        return None
    n = int(text)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def _go_quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _go_strings(values: Sequence[str]) -> str:
    return "[]string{" + ", ".join(_go_quote(v) for v in values) + "}"


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
        return _match_compiled(_compile(self), labels or {})

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
        errs.append(f"key: Invalid value: {_go_quote(key)}: {'; '.join(msgs)}")
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
            if _parse_int64(v) is None:
                errs.append(
                    f"values[{i}]: Invalid value: {_go_quote(v)}: "
                    "for 'Gt', 'Lt' operators, the value must be an integer"
                )
    for i, v in enumerate(vals):
        if msgs := is_valid_label_value(v):
            errs.append(f"values[{i}][{key}]: Invalid value: {_go_quote(v)}: {'; '.join(msgs)}")
    return errs


# Compiled form: (key, code, payload). Codes are small ints so the match loop compares ints.
class _Code(IntEnum):
    IN = 0
    NOT_IN = 1
    EXISTS = 2
    NOT_EXISTS = 3
    GT = 4
    LT = 5


_MISSING: Final = object()
_Compiled = tuple[str, _Code, Any]


def _compile(r: Requirement) -> _Compiled:
    op = r.operator
    if op in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
        return (r.key, _Code.IN, frozenset(r.values))
    if op in (Operator.NOT_IN, Operator.NOT_EQUALS):
        return (r.key, _Code.NOT_IN, frozenset(r.values))
    if op is Operator.EXISTS:
        return (r.key, _Code.EXISTS, None)
    if op is Operator.DOES_NOT_EXIST:
        return (r.key, _Code.NOT_EXISTS, None)
    bound = _parse_int64(r.values[0]) if len(r.values) == 1 else None
    return (r.key, _Code.GT if op is Operator.GREATER_THAN else _Code.LT, bound)


def _match_compiled(c: _Compiled, labels: Mapping[str, str]) -> bool:
    key, code, payload = c
    v = labels.get(key, _MISSING)
    if code is _Code.IN:
        return v in payload
    if code is _Code.NOT_IN:
        return v not in payload
    if code is _Code.EXISTS:
        return v is not _MISSING
    if code is _Code.NOT_EXISTS:
        return v is _MISSING
    n = _parse_int64(v)
    bound: int | None = payload
    if n is None or bound is None:
        return False
    return n > bound if code is _Code.GT else n < bound


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """An AND of requirements, sorted by key (stable), as apimachinery keeps them.

    `LabelSelector()` selects everything; `LabelSelector.nothing()` selects nothing (the
    meaning of a *missing* structured selector, e.g. `metav1.LabelSelectorAsSelector(nil)`).
    """

    requirements: tuple[Requirement, ...] = ()
    selects_nothing: bool = False
    _compiled: tuple[_Compiled, ...] = field(
        init=False, repr=False, compare=False, hash=False, default=()
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", tuple(_compile(r) for r in self.requirements))

    @classmethod
    def everything(cls) -> LabelSelector:
        return _EVERYTHING

    @classmethod
    def nothing(cls) -> LabelSelector:
        return _NOTHING

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (the nothing-selector is not)."""
        return not self.requirements and not self.selects_nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.selects_nothing:
            return False
        if labels is None:
            labels = {}
        get = labels.get
        for key, code, payload in self._compiled:
            v = get(key, _MISSING)
            if code is _Code.IN:
                if v not in payload:
                    return False
            elif code is _Code.NOT_IN:
                if v in payload:
                    return False
            elif code is _Code.EXISTS:
                if v is _MISSING:
                    return False
            elif code is _Code.NOT_EXISTS:
                if v is not _MISSING:
                    return False
            elif not _match_compiled((key, code, payload), labels):
                return False
        return True

    def requires_exact_match(self, key: str) -> str | None:
        """The single value `key` must have, if the selector pins it (for index look-ups)."""
        for r in self.requirements:
            if r.key == key:
                if (
                    r.operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN)
                    and len(r.values) == 1
                ):
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


_EVERYTHING: Final = LabelSelector()
_NOTHING: Final = LabelSelector(selects_nothing=True)


def _sorted_by_key(reqs: Iterable[Requirement]) -> tuple[Requirement, ...]:
    return tuple(sorted(reqs, key=lambda r: r.key))


def label_selector_from_set(labels: Mapping[str, str] | None) -> LabelSelector:
    """Exact-match selector for a plain map (a Service's or RC's `spec.selector`).

    Not validated, like apimachinery's SelectorFromSet; an empty or missing map selects
    everything.
    """
    if not labels:
        return _EVERYTHING
    return LabelSelector(
        requirements=_sorted_by_key(
            Requirement(key=k, operator=Operator.EQUALS, values=(v,)) for k, v in labels.items()
        )
    )


_STRUCTURED_OPS: Final = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def label_selector_from_dict(sel: Mapping[str, Any] | None) -> LabelSelector:
    """The structured form (`matchLabels` / `matchExpressions`), as LabelSelectorAsSelector.

    `None` selects nothing; `{}` (no labels, no expressions) selects everything.
    Invalid keys, values or operators raise BadRequest.
    """
    if sel is None:
        return _NOTHING
    if not isinstance(sel, Mapping):
        raise BadRequest(f"label selector must be an object, got {type(sel).__name__}")
    match_labels = sel.get("matchLabels") or {}
    exprs = sel.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping):
        raise BadRequest("matchLabels must be a map of strings")
    if not isinstance(exprs, list):
        raise BadRequest("matchExpressions must be a list")
    if not match_labels and not exprs:
        return _EVERYTHING
    reqs: list[Requirement] = []
    for k, v in match_labels.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise BadRequest(f"matchLabels[{k}]: must be a string, got {v!r}")
        reqs.append(Requirement.new(k, Operator.EQUALS, (v,)))
    for i, expr in enumerate(exprs):
        if not isinstance(expr, Mapping):
            raise BadRequest(f"matchExpressions[{i}]: must be an object")
        key = expr.get("key")
        op_name = expr.get("operator")
        values = expr.get("values") or []
        op = _STRUCTURED_OPS.get(op_name) if isinstance(op_name, str) else None
        if op is None:
            shown = _go_quote(op_name) if isinstance(op_name, str) else repr(op_name)
            raise BadRequest(f"{shown} is not a valid label selector operator")
        if not isinstance(key, str):
            raise BadRequest(f"matchExpressions[{i}].key: must be a string")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise BadRequest(f"matchExpressions[{i}].values: must be a list of strings")
        reqs.append(Requirement.new(key, op, values))
    return LabelSelector(requirements=_sorted_by_key(reqs))


# ---- the string grammar (a port of apimachinery's Lexer and Parser) ----


class _Tok(IntEnum):
    ERROR = 0
    EOS = 1
    CLOSED_PAR = 2
    COMMA = 3
    NOT = 4
    DOUBLE_EQ = 5
    EQ = 6
    GT = 7
    ID = 8
    IN = 9
    LT = 10
    NOT_EQ = 11
    NOT_IN = 12
    OPEN_PAR = 13


_SYMBOLS: Final = {
    ")": _Tok.CLOSED_PAR,
    ",": _Tok.COMMA,
    "!": _Tok.NOT,
    "==": _Tok.DOUBLE_EQ,
    "=": _Tok.EQ,
    ">": _Tok.GT,
    "<": _Tok.LT,
    "!=": _Tok.NOT_EQ,
    "(": _Tok.OPEN_PAR,
}
_SPECIAL: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")
_Item = tuple[_Tok, str]


def _lex(s: str) -> list[_Item]:
    items: list[_Item] = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in _WHITESPACE:
            i += 1
        if i >= n:
            items.append((_Tok.EOS, ""))
            return items
        c = s[i]
        if c in _SPECIAL:
            two = s[i : i + 2]
            if two in ("==", "!="):
                items.append((_SYMBOLS[two], two))
                i += 2
            else:
                items.append((_SYMBOLS[c], c))
                i += 1
            continue
        j = i
        while j < n and s[j] not in _SPECIAL and s[j] not in _WHITESPACE:
            j += 1
        lit = s[i:j]
        i = j
        tok = _Tok.IN if lit == "in" else _Tok.NOT_IN if lit == "notin" else _Tok.ID
        items.append((tok, lit))


class _ParseError(Exception):
    pass


class _Parser:
    """Recursive descent over the scanned items; `in`/`notin` read as identifiers in values."""

    def __init__(self, items: list[_Item]) -> None:
        self.items = items
        self.pos = 0

    def lookahead(self, *, values: bool) -> _Item:
        tok, lit = self.items[min(self.pos, len(self.items) - 1)]
        if values and tok in (_Tok.IN, _Tok.NOT_IN):
            tok = _Tok.ID
        return tok, lit

    def consume(self, *, values: bool) -> _Item:
        item = self.lookahead(values=values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead(values=True)
            if tok in (_Tok.ID, _Tok.NOT):
                try:
                    reqs.append(self.requirement())
                except (_ParseError, BadRequest) as e:
                    raise _ParseError(f"unable to parse requirement: {e}") from None
                t, lit2 = self.consume(values=True)
                if t is _Tok.EOS:
                    return reqs
                if t is _Tok.COMMA:
                    t2, l2 = self.lookahead(values=True)
                    if t2 not in (_Tok.ID, _Tok.NOT):
                        raise _ParseError(f"found '{l2}', expected: identifier after ','")
                else:
                    raise _ParseError(f"found '{lit2}', expected: ',' or 'end of string'")
            elif tok is _Tok.EOS:
                return reqs
            else:
                raise _ParseError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        key, op = self.key_and_inferred_operator()
        if op is not None:
            return Requirement.new(key, op, ())
        op = self.operator()
        if op in (Operator.IN, Operator.NOT_IN):
            vals = self.value_set()
        else:
            vals = self.exact_value()
        return Requirement.new(key, op, vals)

    def key_and_inferred_operator(self) -> tuple[str, Operator | None]:
        op: Operator | None = None
        tok, lit = self.consume(values=True)
        if tok is _Tok.NOT:
            op = Operator.DOES_NOT_EXIST
            tok, lit = self.consume(values=True)
        if tok is not _Tok.ID:
            raise _ParseError(f"found '{lit}', expected: identifier")
        if msgs := is_qualified_name(lit):
            raise _ParseError(f"key: Invalid value: {_go_quote(lit)}: {'; '.join(msgs)}")
        t, _ = self.lookahead(values=True)
        if op is None and t in (_Tok.EOS, _Tok.COMMA):
            op = Operator.EXISTS
        return lit, op

    def operator(self) -> Operator:
        tok, lit = self.consume(values=False)
        ops = {
            _Tok.IN: Operator.IN,
            _Tok.EQ: Operator.EQUALS,
            _Tok.DOUBLE_EQ: Operator.DOUBLE_EQUALS,
            _Tok.GT: Operator.GREATER_THAN,
            _Tok.LT: Operator.LESS_THAN,
            _Tok.NOT_IN: Operator.NOT_IN,
            _Tok.NOT_EQ: Operator.NOT_EQUALS,
        }
        op = ops.get(tok)
        if op is None:
            raise _ParseError(f"found '{lit}', expected: {_BINARY_OPERATORS}")
        return op

    def value_set(self) -> set[str]:
        tok, lit = self.consume(values=True)
        if tok is not _Tok.OPEN_PAR:
            raise _ParseError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(values=True)
        if tok in (_Tok.ID, _Tok.COMMA):
            vals = self.identifier_list()
            tok2, _ = self.consume(values=True)
            if tok2 is not _Tok.CLOSED_PAR:
                raise _ParseError(f"found '{lit}', expected: ')'")
            return vals
        if tok is _Tok.CLOSED_PAR:
            self.consume(values=True)
            return {""}
        raise _ParseError(f"found '{lit}', expected: ',', ')' or identifier")

    def identifier_list(self) -> set[str]:
        vals: set[str] = set()
        while True:
            tok, lit = self.consume(values=True)
            if tok is _Tok.ID:
                vals.add(lit)
                tok2, lit2 = self.lookahead(values=True)
                if tok2 is _Tok.COMMA:
                    continue
                if tok2 is _Tok.CLOSED_PAR:
                    return vals
                raise _ParseError(f"found '{lit2}', expected: ',' or ')'")
            if tok is _Tok.COMMA:
                if not vals:
                    vals.add("")
                tok2, _ = self.lookahead(values=True)
                if tok2 is _Tok.CLOSED_PAR:
                    vals.add("")
                    return vals
                if tok2 is _Tok.COMMA:
                    self.consume(values=True)
                    vals.add("")
                continue
            raise _ParseError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        tok, _ = self.lookahead(values=True)
        if tok in (_Tok.EOS, _Tok.COMMA):
            return {""}
        tok, lit = self.consume(values=True)
        if tok is _Tok.ID:
            return {lit}
        raise _ParseError(f"found '{lit}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse `labelSelector=` syntax (`a=b,c!=d,e in (f,g),!h,i`); "" selects everything.

    Raises BadRequest with apimachinery's message for any syntax or validation error.
    """
    if not isinstance(text, str):
        raise BadRequest(f"label selector must be a string, got {type(text).__name__}")
    if not text.strip(" \t\r\n"):
        return _EVERYTHING
    try:
        reqs = _Parser(_lex(text)).parse()
    except _ParseError as e:
        raise BadRequest(str(e)) from None
    return LabelSelector(requirements=_sorted_by_key(reqs))
