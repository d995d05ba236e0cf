"""A small, fast YAML writer for the report documents (notes and status files), and its
reader.

PyYAML's C dumper needs about 0.5 s for the 10,000 object lines of a W10k status file;
this writer needs a few milliseconds. It writes block mappings and sequences, and the
"leaf" mappings (every value a scalar: an object's health, the counts) in flow style on
one line, so that `git diff` of a status file shows exactly the objects that changed.
Strings are plain only when no YAML 1.1 or 1.2 reader could read them as anything else;
otherwise they are JSON-quoted (ASCII escapes), which every YAML reader accepts.

`load` reads back exactly the subset `dump` writes, line by line (a W10k status file in
tens of milliseconds, where libyaml with PyYAML's constructor needs about a second), and
gives what PyYAML's safe loader gives for it; any other text is `NotOurs`, for a real YAML
reader to read.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

# Starts with a letter, then only characters that never start YAML syntax mid-scalar.
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*\Z")
_WORDS = frozenset(
    w
    for base in ("y", "yes", "n", "no", "true", "false", "on", "off", "null")
    for w in (base, base.capitalize(), base.upper())
)


# JSON writes characters beyond U+FFFF as surrogate pairs, which YAML does not take.
_PAIR = re.compile(r"(\\\\)|\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})")


def _astral(m: re.Match[str]) -> str:
    if m[1]:
        return m[1]
    code = 0x10000 + ((int(m[2], 16) - 0xD800) << 10) + (int(m[3], 16) - 0xDC00)
    return f"\\U{code:08X}"


@functools.lru_cache(maxsize=4096)
def _string(value: str) -> str:
    if _PLAIN.match(value) and value not in _WORDS:
        return value
    quoted = json.dumps(value)
    return _PAIR.sub(_astral, quoted) if "\\ud" in quoted else quoted


def scalar(value: Any) -> str:
    """One scalar as YAML text that reads back as the same value."""
    if type(value) is str:
        # Kinds, namespaces, verdicts and keys repeat on every line: cached.
        return _string(value) if len(value) <= 64 else _string.__wrapped__(value)
    if isinstance(value, str):
        return _string.__wrapped__(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = json.dumps(value)  # YAML 1.1 wants a dot in the mantissa: 1.0e-05, not 1e-05
        mantissa, e, exponent = text.partition("e")
        return f"{mantissa}.0e{exponent}" if e and "." not in mantissa else text
    raise TypeError(f"cannot write a {type(value).__name__} in a report document")


_SCALAR_TYPES = frozenset({str, int, bool, float, type(None)})


def _is_leaf(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    for v in value.values():
        # The exact scalar types first: an ABC isinstance check costs ten times as much,
        # and a W10k status file asks 100,000 times.
        if type(v) not in _SCALAR_TYPES and isinstance(v, Mapping | list | tuple):
            return False
    return True


def _flow(value: Mapping[str, Any]) -> str:
    return "{" + ", ".join([f"{scalar(k)}: {scalar(v)}" for k, v in value.items()]) + "}"


def _emit(value: Any, indent: str, out: list[str]) -> None:
    """Append the lines of a block mapping or sequence at `indent`."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            key = indent + scalar(k) + ":"
            if isinstance(v, Mapping):
                if not v:
                    out.append(key + " {}")
                elif _is_leaf(v) and len(v) <= 8:
                    out.append(key + " " + _flow(v))
                else:
                    out.append(key)
                    _emit(v, indent + "  ", out)
            elif isinstance(v, list | tuple):
                if not v:
                    out.append(key + " []")
                else:
                    out.append(key)
                    _emit(v, indent, out)  # sequences not indented under their key
            else:
                out.append(key + " " + scalar(v))
        return
    for item in value:
        if isinstance(item, Mapping):
            if not item or _is_leaf(item):
                out.append(indent + "- " + _flow(item))
            else:
                nested: list[str] = []
                _emit(item, indent + "  ", nested)
                nested[0] = indent + "- " + nested[0][len(indent) + 2 :]
                out.extend(nested)
        elif isinstance(item, list | tuple):
            raise TypeError("nested sequences are not used in report documents")
        else:
            out.append(indent + "- " + scalar(item))


def dump(doc: Mapping[str, Any] | Sequence[Any], *, header: str = "") -> str:
    """`doc` as a YAML document; `header` lines are written first as comments."""
    out = [f"# {line}".rstrip() for line in header.splitlines()]
    if not doc:
        out.append("{}" if isinstance(doc, Mapping) else "[]")
    _emit(doc, "", out)
    return "\n".join(out) + "\n"


class NotOurs(ValueError):
    """The text is not laid out as `dump` writes: read it with a YAML reader instead."""


_QUOTED = r'"(?:[^"\\\n]|\\.)*"'
_TOKEN = rf"{_QUOTED}|-?(?:0|[1-9][0-9]*)(?![A-Za-z0-9_./-])|[A-Za-z][A-Za-z0-9_./-]*"
_FLOW_PAIR = re.compile(rf"({_TOKEN}): ({_TOKEN})(, |\}}\Z)")
_KEY = re.compile(rf"({_TOKEN}):(?: |\Z)")
_WHOLE = re.compile(rf"(?:{_TOKEN})\Z")
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "null": None}
_NOT_WRITTEN = re.compile(r"[^\x20-\x7e\n]")
_ASTRAL = re.compile(r"(\\\\)|\\U([0-9A-Fa-f]{8})")


def _astral_char(m: re.Match[str]) -> str:
    if m[1]:
        return m[1]
    code = int(m[2], 16)
    if not 0x10000 <= code <= 0x10FFFF:
        raise NotOurs("a \\U escape `scalar` does not write")
    return chr(code)


def _value(token: str) -> Any:
    """A scalar token of `_TOKEN` as PyYAML's safe loader reads it."""
    first = token[0]
    if first == '"':
        if "\\" in token:
            if _SURROGATE.search(token):
                raise NotOurs("escapes a JSON and a YAML reader read differently")
            if "\\U" in token:
                token = _ASTRAL.sub(_astral_char, token)  # YAML's, which JSON lacks
        try:
            text: str = orjson.loads(token)
        except orjson.JSONDecodeError:
            raise NotOurs(f"not a JSON string: {token[:40]}") from None
        return text
    if first == "-" or first.isdigit():
        return int(token)
    if token in _WORDS:
        if token in _CONSTANTS:
            return _CONSTANTS[token]
        raise NotOurs(f"{token!r} is not written plain here")
    return token


def _read_flow(text: str, seen: dict[str, Any] | None = None) -> dict[Any, Any]:
    """`{k: v, ...}`: a leaf mapping on one line (`seen`: tokens already read)."""
    if text == "{}":
        return {}
    if seen is None:
        seen = {}
    out: dict[Any, Any] = {}
    pos, end = 1, len(text)
    match = _FLOW_PAIR.match
    while pos < end:
        m = match(text, pos)
        if m is None:
            raise NotOurs(f"not a flow mapping of scalars: {text[:60]}")
        k, v = m[1], m[2]
        key = seen[k] if k in seen else seen.setdefault(k, _value(k))
        out[key] = seen[v] if v in seen else seen.setdefault(v, _value(v))
        pos = m.end()
    if not text.endswith("}"):
        raise NotOurs(f"not a flow mapping of scalars: {text[:60]}")
    return out


def _read_inline(text: str, seen: dict[str, Any] | None = None) -> Any:
    """The value after `key: ` or `- ` when it stands on its own line."""
    if text[0] == "{":
        return _read_flow(text, seen)
    if text == "[]":
        return []
    if _WHOLE.match(text) is None:
        raise NotOurs(f"not a scalar: {text[:60]}")
    return _value(text)


class _Reader:
    __slots__ = ("i", "lines", "seen")

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.i = 0
        self.seen: dict[str, Any] = {}  # scalars repeat on every line: read each once

    def indent_of(self, line: str) -> int:
        return len(line) - len(line.lstrip(" "))

    def block(self, indent: int) -> Any:
        line = self.lines[self.i]
        if line.startswith("- ", indent):
            return self.sequence(indent)
        return self.mapping(indent)

    def mapping(self, indent: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        lines = self.lines
        while self.i < len(lines):
            line = lines[self.i]
            if self.indent_of(line) != indent or line.startswith("- ", indent):
                break
            m = _KEY.match(line, indent)
            if m is None:
                raise NotOurs(f"not a mapping key: {line[:60]}")
            key = _value(m[1])
            rest = line[m.end() :]
            self.i += 1
            if rest:
                out[key] = _read_inline(rest)
                continue
            if self.i >= len(lines):
                raise NotOurs("a key without a value at the end")
            nxt = lines[self.i]
            below = self.indent_of(nxt)
            if below == indent and nxt.startswith("- ", indent):
                out[key] = self.sequence(indent)
            elif below == indent + 2 and not nxt.startswith("- ", below):
                out[key] = self.mapping(indent + 2)
            else:
                raise NotOurs(f"a key without a value: {line[:60]}")
        return out

    def sequence(self, indent: int) -> list[Any]:
        out: list[Any] = []
        lines = self.lines
        while self.i < len(lines):
            line = lines[self.i]
            if self.indent_of(line) != indent or not line.startswith("- ", indent):
                break
            rest = line[indent + 2 :]
            if rest[:1] in ("{", "["):
                out.append(_read_inline(rest, self.seen))
                self.i += 1
            elif _WHOLE.match(rest) is not None:
                out.append(_value(rest))
                self.i += 1
            elif _KEY.match(rest) is not None:
                # `- key: ...`, the item's further keys two columns in.
                lines[self.i] = " " * (indent + 2) + rest
                out.append(self.mapping(indent + 2))
            else:
                raise NotOurs(f"not a sequence item: {line[:60]}")
        return out


def load(data: bytes | str) -> Any:
    """A document `dump` wrote, read back as PyYAML's safe loader reads it; `NotOurs` for
    any text not laid out so (printable ASCII, comments only at the top, no blank lines,
    no trailing spaces, the scalars `scalar` writes)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    if _NOT_WRITTEN.search(text):
        raise NotOurs("a character `dump` never writes (it writes printable ASCII)")
    lines = text.split("\n")
    if lines[-1] != "":
        raise NotOurs("no newline at the end")
    lines.pop()
    start = 0
    while start < len(lines) and lines[start].startswith("#"):
        start += 1
    body = lines[start:]
    if not body:
        raise NotOurs("no document")
    for line in body:
        if not line or line[-1] == " " or "\t" in line or "\r" in line or line[0] == "#":
            raise NotOurs("blank line, tab, trailing space or comment")
    if len(body) == 1 and body[0] in ("{}", "[]"):
        return {} if body[0] == "{}" else []
    reader = _Reader(body)
    if reader.indent_of(body[0]) != 0:
        raise NotOurs("the document does not start in the first column")
    doc = reader.block(0)
    if reader.i != len(body):
        raise NotOurs(f"unexpected line: {body[reader.i][:60]}")
    return doc
