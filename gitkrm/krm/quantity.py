"""Kubernetes resource quantities (`100m`, `1Gi`, `1e3`): parsing and comparison.

Used by validation (a malformed quantity is Invalid, as on a cluster) and by the
diff's semantic equality (`500m` equals `0.5`, `1Gi` equals `1024Mi`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal, InvalidOperation
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
# The grammar of k8s.io/apimachinery/pkg/api/resource: a signed decimal number
# followed by a binary SI suffix, a decimal SI suffix or a decimal exponent.
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]?)$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@lru_cache(maxsize=4096)
def parse_quantity(value: str | int | float) -> Decimal:
    """The exact value of a quantity; raises QuantityError when malformed."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must match the regular expression: {value!r}")
    if isinstance(value, int | float):
        return Decimal(str(value))
    m = _QUANTITY.match(value)
    if not m:
        raise QuantityError(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    number, suffix = m.groups()
    try:
        base = Decimal(number)
    except InvalidOperation as e:  # pragma: no cover - the regex admits only numbers
        raise QuantityError(f"invalid quantity {value!r}") from e
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix[:1] in ("e", "E"):
        return base.scaleb(int(suffix[1:]))
    return base * _DECIMAL[suffix]


def is_quantity(value: object) -> bool:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return False
    try:
        parse_quantity(value)
    except QuantityError:
        return False
    return True


def quantities_equal(a: object, b: object) -> bool:
    """True when both are quantities of the same value (`1Gi` == `1024Mi`)."""
    if a == b and type(a) is type(b):
        return True
    if not (is_quantity(a) and is_quantity(b)):
        return False
    return parse_quantity(a) == parse_quantity(b)


# -- arithmetic and the canonical text (resource.Quantity's Add and String) ----------------

_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P"}
_DECIMAL_SUFFIXES[18] = "E"
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


@dataclass(frozen=True, slots=True)
class Quantity:
    """A quantity's value and the format its text was in (`BinarySI` for `Mi`, `Gi`...,
    `DecimalExponent` for `1e3`, else `DecimalSI`), which a sum keeps from its left operand
    (a zero takes the other's) and `str()` writes it in, as apimachinery's resource.Quantity
    does (so `500m + 500m` is `1`, `128Mi + 128Mi` is `256Mi`, `0.5` is `500m`)."""

    value: Decimal
    format: str = "DecimalSI"

    @classmethod
    def of(cls, raw: str | int | float) -> Quantity:
        """Raises QuantityError when malformed."""
        value = parse_quantity(raw)
        text = str(raw)
        if text[-2:] in _BINARY:
            return cls(value, "BinarySI")
        if "e" in text.lower():
            return cls(value, "DecimalExponent")
        return cls(value)

    def __add__(self, other: Quantity) -> Quantity:
        # A zero takes the other's format (Quantity.Add), so sums from zero keep `Mi`.
        return Quantity(self.value + other.value, self.format if self.value else other.format)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.value - other.value, self.format)

    def milli(self) -> int:
        """MilliValue: the value in thousandths, rounded up."""
        return math.ceil(self.value * 1000)

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)


ZERO = Quantity(Decimal(0))


def format_quantity(value: Decimal, fmt: str = "DecimalSI") -> str:
    """Quantity.String(): the canonical text of `value` in `fmt` (CanonicalizeBytes)."""
    if value == 0:
        return "0"
    # Quantities hold nanos at most: smaller values round up (away from zero).
    if value != value.quantize(_NANO, rounding=ROUND_UP):
        value = value.quantize(_NANO, rounding=ROUND_UP)
    if fmt == "BinarySI" and abs(value) >= 1024 and value == value.to_integral_value():
        amount, power = int(value), 0
        while amount % 1024 == 0 and power < len(_BINARY_SUFFIXES) - 1:
            amount //= 1024
            power += 1
        return f"{amount}{_BINARY_SUFFIXES[power]}"
    sign, digits, exponent = value.normalize().as_tuple()
    mantissa = int("".join(map(str, digits)))
    exp = int(exponent)
    shift = exp % 3  # the exponent made a multiple of 3 by growing the mantissa
    mantissa *= 10**shift
    exp -= shift
    text = f"{'-' if sign else ''}{mantissa}"
    if fmt == "DecimalExponent":
        return text if exp == 0 else f"{text}e{exp}"
    suffix = _DECIMAL_SUFFIXES.get(exp)
    return f"{text}{suffix}" if suffix is not None else f"{text}e{exp}"


_NANO = Decimal("1e-9")
