"""Kubernetes resource quantities (`100m`, `1Gi`, `1e3`): parsing and comparison.

Used by validation (a malformed quantity is Invalid, as on a cluster) and by the
diff's semantic equality (`500m` equals `0.5`, `1Gi` equals `1024Mi`).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
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
