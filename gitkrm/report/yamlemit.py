"""A small, fast YAML writer for the report documents (notes and status files).

PyYAML's C dumper needs about 0.5 s for the 10,000 object lines of a W10k status file;
this writer needs a few milliseconds. It writes block mappings and sequences, and the
"leaf" mappings (every value a scalar: an object's health, the counts) in flow style on
one line, so that `git diff` of a status file shows exactly the objects that changed.
Strings are plain only when no YAML 1.1 or 1.2 reader could read them as anything else;
otherwise they are JSON-quoted (ASCII escapes), which every YAML reader accepts.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

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


def _is_leaf(value: Any) -> bool:
    return isinstance(value, Mapping) and all(
        not isinstance(v, Mapping | list | tuple) for v in value.values()
    )


def _flow(value: Mapping[str, Any]) -> str:
    return "{" + ", ".join([scalar(k) + ": " + scalar(v) for k, v in value.items()]) + "}"


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
