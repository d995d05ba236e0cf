"""JSON values compared the way Go's apimachinery compares decoded JSON.

Go decodes every JSON number as float64 and compares `interface{}` values by dynamic
type, so `1 == 1.0` but `true != 1`. Python's `==` agrees on the first and not on the
second (`True == 1`), and `hash(True) == hash(1)`; these helpers keep the Go rules so that
patches come out exactly as Kubernetes computes them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from decimal import Decimal
from typing import Final, TypeVar

T = TypeVar("T")

NUMBER: Final = "n"
STRING: Final = "s"
BOOL: Final = "b"
NULL: Final = "z"
MAP: Final = "m"
LIST: Final = "l"

_KINDS: Final[dict[type, str]] = {
    dict: MAP,
    list: LIST,
    str: STRING,
    bool: BOOL,
    int: NUMBER,
    float: NUMBER,
    type(None): NULL,
}


def kind(value: object) -> str:
    """The JSON kind of a value: one of MAP, LIST, STRING, BOOL, NUMBER, NULL."""
    k = _KINDS.get(type(value))
    if k is not None:
        return k
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int | float):
        return NUMBER
    if isinstance(value, str):
        return STRING
    if isinstance(value, dict):
        return MAP
    if isinstance(value, list | tuple):
        return LIST
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def go_equal(a: object, b: object) -> bool:
    """Go `reflect.DeepEqual` of two decoded JSON values (numbers by value, types strict)."""
    if a is b:
        return True
    ta = type(a)
    tb = type(b)
    if ta is tb:
        if isinstance(a, dict):
            assert isinstance(b, dict)
            return len(a) == len(b) and all(k in b and go_equal(v, b[k]) for k, v in a.items())
        if isinstance(a, list):
            assert isinstance(b, list)
            return len(a) == len(b) and all(go_equal(x, y) for x, y in zip(a, b, strict=True))
        return a == b
    ka = kind(a)
    return ka == kind(b) and ka == NUMBER and a == b


class _Bool:
    """A hashable stand-in for a JSON boolean that never equals a number."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "true" if self.value else "false"


_TRUE: Final = _Bool(True)
_FALSE: Final = _Bool(False)


def hkey(value: object) -> Hashable:
    """A hashable key for a scalar with Go `==` semantics (`1 == 1.0`, `true != 1`).

    Raises TypeError for maps and lists, which Go cannot compare with `==` either.
    """
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    if isinstance(value, dict | list):
        raise TypeError("maps and lists cannot be compared as scalars")
    return value


def gofmt(value: object) -> str:
    """Go `fmt.Sprintf("%v", v)` of a decoded JSON value (used to sort merge keys)."""
    t = type(value)
    if t is str:
        return value  # type: ignore[return-value]
    if value is None:
        return "<nil>"
    if t is bool:
        return "true" if value else "false"
    if t is int:
        return str(value)  # apimachinery decodes integers as int64
    if t is float:
        return go_float(value)  # type: ignore[arg-type]
    if isinstance(value, dict):
        inner = " ".join(f"{k}:{gofmt(value[k])}" for k in sorted(value))
        return f"map[{inner}]"
    if isinstance(value, list):
        return "[" + " ".join(gofmt(v) for v in value) + "]"
    return str(value)


def go_float(x: float) -> str:
    """A float64 formatted like Go's `%v` (`strconv` 'g', shortest, exponent if < -4 or >= 6)."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "+Inf" if x > 0 else "-Inf"
    if x == 0:
        return "-0" if str(x).startswith("-") else "0"
    sign, digits_t, exp = Decimal(repr(x)).as_tuple()
    digits = "".join(map(str, digits_t)).rstrip("0") or "0"
    assert isinstance(exp, int)
    # number = 0.d1d2d3... * 10**dp
    dp = len(digits_t) + exp
    lead = len(digits) - len(digits.lstrip("0"))
    digits = digits.lstrip("0")
    dp -= lead
    neg = "-" if sign else ""
    e = dp - 1
    if e < -4 or e >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        es = "-" if e < 0 else "+"
        return f"{neg}{mant}e{es}{abs(e):02d}"
    if dp <= 0:
        return f"{neg}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return f"{neg}{digits}{'0' * (dp - len(digits))}"
    return f"{neg}{digits[:dp]}.{digits[dp:]}"


def go_sort_scalars(values: list[T]) -> list[T]:
    """Go `sortScalars`: sort by `%v` text, as `sort.Sort` with a `<=` less function.

    For up to 12 elements Go runs an insertion sort, which puts equal texts in reverse
    order of appearance; that is reproduced here for every length.
    """
    return go_sort_by(values, gofmt)


def go_sort_by(values: list[T], text: Callable[[T], str | tuple[str, ...]]) -> list[T]:
    """Sort like Go `sort.Sort` with `Less = text(a) <= text(b)` (equal keys reversed)."""
    if len(values) < 2:
        return list(values)
    keyed = [(text(v), i, v) for i, v in enumerate(values)]
    keyed.sort(key=lambda t: (t[0], -t[1]))
    return [v for _, _, v in keyed]


def dedupe_scalars(values: list[T]) -> list[T]:
    """Go `deduplicateScalars`, including the order its swap-with-last step leaves."""
    s = list(values)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if go_equal(s[i], s[j]):
                s[j] = s[length]
                del s[length:]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s
