"""Shell patterns of `${var#pattern}` and `${var%pattern}`: Flux's envsubst `path.Match`.

Go's `path.Match` as drone/envsubst changed it: `*` and `?` match `/` too, and a trailing
`*` matches the rest of the name. Ported line by line (the quirks are the contract).
"""

from __future__ import annotations


class BadPattern(Exception):
    """A malformed pattern (Go's ErrBadPattern)."""


def _scan_chunk(pattern: str) -> tuple[bool, str, str]:
    star = False
    while pattern and pattern[0] == "*":
        pattern = pattern[1:]
        star = True
    in_range = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 < len(pattern):
                i += 1
        elif c == "[":
            in_range = True
        elif c == "]":
            in_range = False
        elif c == "*" and not in_range:
            break
        i += 1
    return star, pattern[:i], pattern[i:]


def _get_esc(chunk: str) -> tuple[str, str]:
    if not chunk or chunk[0] in "-]":
        raise BadPattern
    if chunk[0] == "\\":
        chunk = chunk[1:]
        if not chunk:
            raise BadPattern
    rest = chunk[1:]
    if not rest:
        raise BadPattern
    return chunk[0], rest


def _match_chunk(chunk: str, s: str) -> tuple[str, bool]:
    while chunk:
        if not s:
            return "", False
        c = chunk[0]
        if c == "[":
            r = s[0]
            s = s[1:]
            chunk = chunk[1:]
            negated = bool(chunk) and chunk[0] == "^"
            if negated:
                chunk = chunk[1:]
            matched = False
            ranges = 0
            while True:
                if chunk and chunk[0] == "]" and ranges > 0:
                    chunk = chunk[1:]
                    break
                lo, chunk = _get_esc(chunk)
                hi = lo
                if chunk[0] == "-":
                    hi, chunk = _get_esc(chunk[1:])
                if lo <= r <= hi:
                    matched = True
                ranges += 1
            if matched == negated:
                return "", False
        elif c == "?":
            s = s[1:]
            chunk = chunk[1:]
        else:
            if c == "\\":
                chunk = chunk[1:]
                if not chunk:
                    raise BadPattern
            if chunk[0] != s[0]:
                return "", False
            s = s[1:]
            chunk = chunk[1:]
    return s, True


def match(pattern: str, name: str) -> bool:
    """Whether `name` matches `pattern` whole; BadPattern when it is malformed."""
    while pattern:
        star, chunk, pattern = _scan_chunk(pattern)
        if star and not chunk:
            return True
        rest, ok = _match_chunk(chunk, name)
        if ok and (not rest or pattern):
            name = rest
            continue
        if star:
            for i in range(len(name)):
                rest, ok = _match_chunk(chunk, name[i + 1 :])
                if ok:
                    if not pattern and rest:
                        continue
                    name = rest
                    break
            else:
                return False
            continue
        return False
    return not name
