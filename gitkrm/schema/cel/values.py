"""Kubernetes' CEL value types (Quantity, URL, IP, CIDR, Semver) as tagged maps.

cel-expr-python passes only CEL's own types between Python functions and the evaluator (no
opaque values), so each Kubernetes type is a one-key map `{"#<type>": <canonical text>}`:
functions of the library recognise it by its key, and two equal values compare equal with
`==` as the Kubernetes types do. Pure: parsing and comparison only.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from gitkrm.krm.quantity import QuantityError, parse_quantity

QUANTITY = "#quantity"
URL = "#url"
IP = "#ip"
CIDR = "#cidr"
SEMVER = "#semver"


class CelFunctionError(ValueError):
    """A library function's argument is out of its domain (evaluation error, as cel-go's)."""


def tag_of(value: object) -> str | None:
    if isinstance(value, Mapping) and len(value) == 1:
        (key,) = value.keys()
        if isinstance(key, str) and key.startswith("#"):
            return key
    return None


def payload(value: Mapping[str, Any], tag: str) -> str:
    if tag_of(value) != tag:
        raise CelFunctionError(f"no such overload: expected {tag[1:]}")
    text = value[tag]
    assert isinstance(text, str)
    return text


# ---- quantity ----


def quantity_of(text: str) -> dict[str, str]:
    try:
        parse_quantity(text)
    except QuantityError as e:
        raise CelFunctionError(f"invalid quantity: {text}") from e
    return {QUANTITY: text}


def quantity_value(q: Mapping[str, Any]) -> Decimal:
    return parse_quantity(payload(q, QUANTITY))


def quantity_from_decimal(value: Decimal) -> dict[str, str]:
    text = format(value.normalize(), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return {QUANTITY: text}


# ---- url ----


def url_of(text: str) -> dict[str, str]:
    if not is_url(text):
        raise CelFunctionError(f"URL parse error during conversion from string: {text}")
    return {URL: text}


def is_url(text: str) -> bool:
    """Go's url.ParseRequestURI: an absolute URI or an absolute path, no fragment."""
    if "#" in text or not text:
        return False
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        return False
    if parts.scheme:
        return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme))
    return text.startswith("/")


def url_parts(u: Mapping[str, Any]) -> Any:
    return urlsplit(payload(u, URL))


# ---- ip and cidr ----


def ip_of(text: str) -> dict[str, str]:
    if not is_ip(text):
        raise CelFunctionError(f"IP Address {text!r} parse error during conversion from string")
    return {IP: text}


def is_ip(text: str) -> bool:
    """An IPv4 or IPv6 address without zone; IPv4-mapped IPv6 is refused, as Kubernetes does."""
    if "%" in text:
        return False
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return False
    return not (isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None)


def ip_value(value: Mapping[str, Any]) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(payload(value, IP))


def cidr_of(text: str) -> dict[str, str]:
    if not is_cidr(text):
        raise CelFunctionError(f"network address parse error during conversion from string: {text}")
    return {CIDR: text}


def is_cidr(text: str) -> bool:
    if "/" not in text or "%" in text:
        return False
    try:
        ipaddress.ip_interface(text)
    except ValueError:
        return False
    return is_ip(text.split("/", 1)[0])


def cidr_value(value: Mapping[str, Any]) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    return ipaddress.ip_interface(payload(value, CIDR))


# ---- semver ----

_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


def semver_of(text: str) -> dict[str, str]:
    if not _SEMVER.fullmatch(text):
        raise CelFunctionError(f"string {text!r} cannot be converted to a semver")
    return {SEMVER: text}


def semver_parts(value: Mapping[str, Any]) -> tuple[int, int, int, str]:
    m = _SEMVER.fullmatch(payload(value, SEMVER))
    assert m is not None
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) or ""


def _pre_key(pre: str) -> tuple[int, tuple[tuple[int, int, str], ...]]:
    if not pre:
        return (1, ())
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (0, parts)


def semver_compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    pa, pb = semver_parts(a), semver_parts(b)
    ka = (pa[:3], _pre_key(pa[3]))
    kb = (pb[:3], _pre_key(pb[3]))
    return (ka > kb) - (ka < kb)


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    """compareTo of two quantities or two semvers."""
    tag = tag_of(a)
    if tag == QUANTITY:
        x, y = quantity_value(a), quantity_value(b)
        return (x > y) - (x < y)
    if tag == SEMVER:
        return semver_compare(a, b)
    raise CelFunctionError("no such overload: compareTo")
