"""Keep the values of Secrets out of error lines written into Git.

Validation errors quote the offending value (`data.k: Invalid value: {"x":"..."}: must be of
type string`), as the API server's field errors do. For a Secret that value is secret
data, and error lines go into notes and status files that anyone with the repository can
read. So in every line that names a Secret, each quoted value is replaced by `***`.
Credentials are handled separately (the source's redactor).
"""

from __future__ import annotations

import re

from gitkrm.krm import masking

MASK = "***"
_SECRET = re.compile(r"\bSecrets?\b")
_VALUE = re.compile(r"\b(?:Invalid|Unsupported|Duplicate|Forbidden) value: ")
_CLOSE = {"{": "}", "[": "]"}


def _end_of_string(text: str, i: int) -> int:
    """Index just past the JSON/Go string that starts at `text[i]` (a double quote)."""
    i += 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        i += 1
    return len(text)


def _end_of_value(text: str, i: int) -> int:
    """Index just past the value printed at `text[i]`: a string, a balanced `{...}` or
    `[...]`, or a bare token up to `: `, `, ` or `]`."""
    if i >= len(text):
        return i
    c = text[i]
    if c == '"':
        return _end_of_string(text, i)
    if c in _CLOSE:
        depth = []
        while i < len(text):
            c = text[i]
            if c == '"':
                i = _end_of_string(text, i)
                continue
            if c in _CLOSE:
                depth.append(_CLOSE[c])
            elif depth and c == depth[-1]:
                depth.pop()
                if not depth:
                    return i + 1
            i += 1
        return len(text)
    m = re.compile(r": |, |\]|$").search(text, i)
    return m.start() if m else len(text)


def scrub_secret_values(line: str) -> str:
    """`line` with every quoted value masked when it names a Secret, and every value that
    came from a Secret masked wherever it appears (`krm.masking`)."""
    line = masking.mask(line)
    if not _SECRET.search(line):
        return line
    out: list[str] = []
    pos = 0
    for m in _VALUE.finditer(line):
        if m.start() < pos:
            continue
        end = _end_of_value(line, m.end())
        out.append(line[pos : m.end()])
        out.append(MASK)
        pos = end
    out.append(line[pos:])
    return "".join(out)
