"""The `labelSelector=` string grammar: a port of apimachinery's Lexer and Parser.

Kept token for token (including where `in`/`notin` may be identifiers and the exact
error texts) so that kubectl users get the messages they know.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

from gitkrm.errors import BadRequest
from gitkrm.krm.names import is_qualified_name
from gitkrm.krm.selection import BINARY_OPERATORS, Operator, Requirement, go_quote


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


class ParseError(Exception):
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
                except (ParseError, BadRequest) as e:
                    raise ParseError(f"unable to parse requirement: {e}") from None
                t, lit2 = self.consume(values=True)
                if t is _Tok.EOS:
                    return reqs
                if t is _Tok.COMMA:
                    t2, l2 = self.lookahead(values=True)
                    if t2 not in (_Tok.ID, _Tok.NOT):
                        raise ParseError(f"found '{l2}', expected: identifier after ','")
                else:
                    raise ParseError(f"found '{lit2}', expected: ',' or 'end of string'")
            elif tok is _Tok.EOS:
                return reqs
            else:
                raise ParseError(f"found '{lit}', expected: !, identifier, or 'end of string'")

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
            raise ParseError(f"found '{lit}', expected: identifier")
        if msgs := is_qualified_name(lit):
            raise ParseError(f"key: Invalid value: {go_quote(lit)}: {'; '.join(msgs)}")
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
            raise ParseError(f"found '{lit}', expected: {BINARY_OPERATORS}")
        return op

    def value_set(self) -> set[str]:
        tok, lit = self.consume(values=True)
        if tok is not _Tok.OPEN_PAR:
            raise ParseError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(values=True)
        if tok in (_Tok.ID, _Tok.COMMA):
            vals = self.identifier_list()
            tok2, _ = self.consume(values=True)
            if tok2 is not _Tok.CLOSED_PAR:
                raise ParseError(f"found '{lit}', expected: ')'")
            return vals
        if tok is _Tok.CLOSED_PAR:
            self.consume(values=True)
            return {""}
        raise ParseError(f"found '{lit}', expected: ',', ')' or identifier")

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
                raise ParseError(f"found '{lit2}', expected: ',' or ')'")
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
            raise ParseError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        tok, _ = self.lookahead(values=True)
        if tok in (_Tok.EOS, _Tok.COMMA):
            return {""}
        tok, lit = self.consume(values=True)
        if tok is _Tok.ID:
            return {lit}
        raise ParseError(f"found '{lit}', expected: identifier")


def parse_requirements(text: str) -> list[Requirement]:
    """The requirements of a selector string, in the order written; ParseError if invalid."""
    return _Parser(_lex(text)).parse()
