"""kubectl's reading of YAML scalars: go-yaml v2 resolution, then JSON's view of it.

kubectl reads manifests with sigs.k8s.io/yaml: go-yaml v2 decodes into `interface{}`,
then the result goes through JSON. So a plain `yes` is `true`, `0x1F` is 31, `012` is
10, but `2024-01-01` and `12:30` stay strings (timestamps are kept as text, base-60
numbers are not supported), an integral float such as `1e3` reaches the API server as
the integer 1000, and NaN or infinities cannot be sent at all. These rules are kept in
one place for the loader (`yamlio`) and the writer (`yamlout`).
"""

from __future__ import annotations

import functools
import math
import re
import struct
from typing import Final

import yaml

from gitkrm.krm.types import JSONScalar

TAG: Final = "tag:yaml.org,2002:"
STR: Final = TAG + "str"
MERGE_KEY: Final = "<<"

# ---- go-yaml v2 scalar resolution, followed by JSON's view of the result ----

_GO_MAP: Final[dict[str, JSONScalar]] = {
    **dict.fromkeys(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE"], True),
    **dict.fromkeys(["on", "On", "ON"], True),
    **dict.fromkeys(["n", "N", "no", "No", "NO", "false", "False", "FALSE"], False),
    **dict.fromkeys(["off", "Off", "OFF"], False),
    **dict.fromkeys(["", "~", "null", "Null", "NULL"], None),
    **dict.fromkeys([".nan", ".NaN", ".NAN"], math.nan),
    **dict.fromkeys([".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"], math.inf),
    **dict.fromkeys(["-.inf", "-.Inf", "-.INF"], -math.inf),
}
HINT_CHARS: Final = frozenset("+-0123456789yYnNtTfFoO~.")
_GO_INT_RE: Final = re.compile(
    r"([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)", re.ASCII
)
_GO_FLOAT_RE: Final = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", re.ASCII)
_DOT_FLOAT_RE: Final = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?", re.ASCII)
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1
_RADIX: Final = {"x": 16, "X": 16, "o": 8, "O": 8, "b": 2, "B": 2}


def json_float(f: float) -> float | int:
    """What a float becomes after Go's JSON encoding and the API server's decoding."""
    if f.is_integer() and abs(f) < 1e21:
        return int(f)
    return f


def _go_int(digits: str) -> int:
    if len(digits) > 1 and digits[0] == "0":
        radix = _RADIX.get(digits[1])
        return int(digits[2:], radix) if radix else int(digits[1:], 8)
    return int(digits)


_NUMERIC_START: Final = frozenset("+-.0123456789")


@functools.lru_cache(maxsize=8192)
def _resolve_numeric(text: str) -> JSONScalar:
    """go-yaml v2 `resolve("", text)` for text starting with a sign, digit or dot."""
    if text in _GO_MAP:
        return _GO_MAP[text]
    if text[0] == ".":
        return json_float(float(text)) if _DOT_FLOAT_RE.fullmatch(text) else text
    plain = text.replace("_", "")
    m = _GO_INT_RE.fullmatch(plain)
    too_big = False
    if m:
        sign, digits = m.groups()
        n = _go_int(digits)
        if sign == "-":
            n = -n
        if _INT64_MIN <= n <= _INT64_MAX or (not sign and n <= _UINT64_MAX):
            return n
        too_big = not sign  # ParseUint's range error: go-yaml then tries a big.Int
    if _GO_FLOAT_RE.fullmatch(plain):
        f = float(plain)
        if not math.isinf(f):  # Go's ParseFloat fails on overflow
            return json_float(f)
    if too_big and m:
        return _go_int(m.group(2))
    return text


def resolve_plain_scalar(text: str) -> JSONScalar:
    """The value kubectl gives a plain (unquoted, untagged) YAML scalar.

    NaN and infinities are returned as floats; the loader rejects them, as JSON does.
    """
    if not text:
        return None
    c = text[0]
    if c not in HINT_CHARS:
        return text
    if c in _NUMERIC_START:
        return _resolve_numeric(text)
    return _GO_MAP.get(text, text)


def float32_g(f: float) -> str:
    """Go's strconv.FormatFloat(f, 'g', -1, 32), which sigs.k8s.io/yaml uses for float keys."""
    if math.isnan(f):
        return ".nan"
    if math.isinf(f):
        return ".inf" if f > 0 else "-.inf"
    target = struct.unpack("<f", struct.pack("<f", f))[0]
    for digits in range(1, 10):
        text = f"{f:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == target:
            return text
    return repr(f)


def _go_key_less(a: str, b: str) -> bool:
    """go-yaml v2's map key order (sorter.go): letters before digits, digit runs by value."""
    for i in range(min(len(a), len(b))):
        ca, cb = a[i], b[i]
        if ca == cb:
            continue
        al, bl = ca.isalpha(), cb.isalpha()
        if al and bl:
            return ca < cb
        if al or bl:
            return bl
        an = bn = 0
        if ca == "0" or cb == "0":
            j = i - 1
            while j >= 0 and a[j].isdecimal():
                if a[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(a) and a[ai].isdecimal():
            an = an * 10 + ord(a[ai]) - 48
            ai += 1
        bi = i
        while bi < len(b) and b[bi].isdecimal():
            bn = bn * 10 + ord(b[bi]) - 48
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ca < cb
    return len(a) < len(b)


def _go_key_cmp(a: str, b: str) -> int:
    return -1 if _go_key_less(a, b) else (1 if _go_key_less(b, a) else 0)


go_key: Final = functools.cmp_to_key(_go_key_cmp)
_YAML11 = yaml.resolver.Resolver.yaml_implicit_resolvers


def needs_quotes(text: str) -> bool:
    """True when a plain `text` would read back as something else than this string.

    Checked against kubectl's resolution (so `yes`, `1`, `0x1F`, `` stay strings) and
    against YAML 1.1 (so `2024-01-01` and `12:30` stay strings for other tools too).
    """
    if text == MERGE_KEY or not isinstance(resolve_plain_scalar(text), str):
        return True
    for _tag, regexp in _YAML11.get(text[0] if text else "", ()):
        if _tag != STR and regexp.match(text):
            return True
    return False
