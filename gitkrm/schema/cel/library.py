"""The Kubernetes CEL libraries cel-expr-python lacks, declared once for every environment.

Kubernetes adds to CEL: lists (isSorted, sum, min, max, indexOf, lastIndexOf), strings
(charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split, substring, trim,
join, reverse), regex (find, findAll), url, quantity, ip and cidr, semver and sets. Each is
written here in Python over the values of `values`. cel-expr-python dispatches no `dyn`
parameter at run time, so a parameter of any type is declared once per concrete CEL type.
Imported only by `runtime` (which imports cel_expr_python on first use).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from cel_expr_python import cel

from gitkrm.schema.cel import values as v

T = cel.Type
DYN_MAP = T.Map(T.STRING, T.DYN)
LIST = T.List(T.DYN)
_ANY: tuple[tuple[str, Any], ...] = (
    ("int", T.INT),
    ("uint", T.UINT),
    ("double", T.DOUBLE),
    ("string", T.STRING),
    ("bool", T.BOOL),
    ("bytes", T.BYTES),
    ("list", LIST),
    ("map", DYN_MAP),
)


class _Decls:
    """Overloads gathered by function name (one FunctionDecl per name)."""

    def __init__(self) -> None:
        self.by_name: dict[str, list[Any]] = {}

    def add(
        self,
        name: str,
        oid: str,
        ret: Any,
        params: Sequence[Any],
        impl: Callable[..., Any],
        *,
        member: bool = False,
    ) -> None:
        overload = cel.Overload(oid, ret, list(params), is_member=member, impl=_guarded(impl))
        self.by_name.setdefault(name, []).append(overload)

    def decls(self) -> list[Any]:
        return [cel.FunctionDecl(name, ovs) for name, ovs in self.by_name.items()]


def _guarded(impl: Callable[..., Any]) -> Callable[..., Any]:
    """Python exceptions become CEL evaluation errors with a readable message."""

    def call(*args: Any) -> Any:
        try:
            return impl(*args)
        except v.CelFunctionError:
            raise
        except (ValueError, TypeError, IndexError, KeyError, ArithmeticError) as e:
            raise v.CelFunctionError(str(e)) from e

    return call


def _index_of(items: Sequence[Any], x: Any) -> int:
    for i, item in enumerate(items):
        if item == x and type(item) is type(x):
            return i
    return -1


def _last_index_of(items: Sequence[Any], x: Any) -> int:
    i = _index_of(list(reversed(items)), x)
    return -1 if i < 0 else len(items) - 1 - i


def _checked(items: Sequence[Any]) -> list[Any]:
    if not items:
        raise v.CelFunctionError("min/max called on empty list")
    return list(items)


def _sum(items: Sequence[Any]) -> Any:
    return sum(items) if items else 0


def _lists(d: _Decls) -> None:
    d.add(
        "isSorted", "list_is_sorted", T.BOOL, [LIST], lambda xs: list(xs) == sorted(xs), member=True
    )
    # One overload each: the runtime keys functions by argument kinds (every list is "list").
    d.add("sum", "list_sum", T.DYN, [LIST], _sum, member=True)
    d.add("min", "list_min", T.DYN, [LIST], lambda xs: min(_checked(xs)), member=True)
    d.add("max", "list_max", T.DYN, [LIST], lambda xs: max(_checked(xs)), member=True)
    for tn, t in _ANY:
        d.add("indexOf", f"list_{tn}_index_of", T.INT, [LIST, t], _index_of, member=True)
        d.add(
            "lastIndexOf", f"list_{tn}_last_index_of", T.INT, [LIST, t], _last_index_of, member=True
        )


def _substring(s: str, start: int, end: int | None = None) -> str:
    end = len(s) if end is None else end
    if start < 0 or end > len(s) or start > end:
        raise v.CelFunctionError(f"index out of range: {start}")
    return s[start:end]


def _split(s: str, sep: str, n: int = -1) -> list[str]:
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        return chars if n < 0 or n >= len(chars) else [*chars[: n - 1], "".join(chars[n - 1 :])]
    return s.split(sep) if n < 0 else s.split(sep, n - 1)


def _index_in(s: str, sub: str, start: int = 0) -> int:
    if start < 0 or start > len(s):
        raise v.CelFunctionError(f"index out of range: {start}")
    return s.find(sub, start)


def _last_index_in(s: str, sub: str, end: int | None = None) -> int:
    if end is None:
        return s.rfind(sub)
    if end < 0 or end >= len(s) + 1:
        raise v.CelFunctionError(f"index out of range: {end}")
    return s.rfind(sub, 0, end + len(sub))


def _ascii(s: str, upper: bool) -> str:
    return "".join((c.upper() if upper else c.lower()) if c.isascii() else c for c in s)


def _strings(d: _Decls) -> None:
    S, N = T.STRING, T.INT
    d.add(
        "charAt", "string_char_at", S, [S, N], lambda s, i: s[i] if i < len(s) else "", member=True
    )
    d.add("indexOf", "string_index_of", N, [S, S], _index_in, member=True)
    d.add("indexOf", "string_index_of_int", N, [S, S, N], _index_in, member=True)
    d.add("lastIndexOf", "string_last_index_of", N, [S, S], _last_index_in, member=True)
    d.add("lastIndexOf", "string_last_index_of_int", N, [S, S, N], _last_index_in, member=True)
    d.add("lowerAscii", "string_lower_ascii", S, [S], lambda s: _ascii(s, False), member=True)
    d.add("upperAscii", "string_upper_ascii", S, [S], lambda s: _ascii(s, True), member=True)
    d.add("replace", "string_replace", S, [S, S, S], lambda s, a, b: s.replace(a, b), member=True)
    d.add(
        "replace", "string_replace_n", S, [S, S, S, N],
        lambda s, a, b, n: s.replace(a, b, n if n >= 0 else -1), member=True,
    )  # fmt: skip
    d.add("split", "string_split", T.List(S), [S, S], _split, member=True)
    d.add("split", "string_split_n", T.List(S), [S, S, N], _split, member=True)
    d.add("substring", "string_substring", S, [S, N], _substring, member=True)
    d.add("substring", "string_substring_range", S, [S, N, N], _substring, member=True)
    d.add("trim", "string_trim", S, [S], lambda s: s.strip(" \t\n\r\v\f\u0085\u00a0"), member=True)
    d.add("reverse", "string_reverse", S, [S], lambda s: s[::-1], member=True)
    d.add("join", "list_join", S, [T.List(S)], lambda xs: "".join(xs), member=True)
    d.add("join", "list_join_sep", S, [T.List(S), S], lambda xs, sep: sep.join(xs), member=True)


_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def _regex(pattern: str) -> re.Pattern[str]:
    hit = _REGEX_CACHE.get(pattern)
    if hit is None:
        hit = _REGEX_CACHE[pattern] = re.compile(pattern)
    return hit


def _regexes(d: _Decls) -> None:
    S = T.STRING
    d.add(
        "find", "string_find", S, [S, S],
        lambda s, p: (m.group(0) if (m := _regex(p).search(s)) else ""), member=True,
    )  # fmt: skip
    d.add(
        "findAll", "string_find_all", T.List(S), [S, S],
        lambda s, p: [m.group(0) for m in _regex(p).finditer(s)], member=True,
    )  # fmt: skip
    d.add(
        "findAll", "string_find_all_n", T.List(S), [S, S, T.INT],
        lambda s, p, n: [m.group(0) for m in _regex(p).finditer(s)][: n if n >= 0 else None],
        member=True,
    )  # fmt: skip


def _port(u: Mapping[str, Any]) -> str:
    netloc = v.url_parts(u).netloc.rsplit("@", 1)[-1]
    if netloc.startswith("["):
        tail = netloc.split("]", 1)[1]
        return tail[1:] if tail.startswith(":") else ""
    return netloc.rsplit(":", 1)[1] if ":" in netloc else ""


def _host(u: Mapping[str, Any]) -> str:
    return str(v.url_parts(u).netloc.rsplit("@", 1)[-1])


def _hostname(u: Mapping[str, Any]) -> str:
    host = _host(u)
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if ":" in host else host


def _query(u: Mapping[str, Any]) -> dict[str, list[str]]:
    from urllib.parse import parse_qs

    return {k: list(vals) for k, vals in parse_qs(v.url_parts(u).query).items()}


def _urls(d: _Decls) -> None:
    S, M = T.STRING, DYN_MAP
    d.add("url", "string_to_url", M, [S], v.url_of)
    d.add("isURL", "is_url_string", T.BOOL, [S], v.is_url)
    d.add("getScheme", "url_get_scheme", S, [M], lambda u: v.url_parts(u).scheme, member=True)
    d.add("getHost", "url_get_host", S, [M], _host, member=True)
    d.add("getHostname", "url_get_hostname", S, [M], _hostname, member=True)
    d.add("getPort", "url_get_port", S, [M], _port, member=True)
    d.add(
        "getEscapedPath", "url_get_escaped_path", S, [M], lambda u: v.url_parts(u).path, member=True
    )
    d.add("getQuery", "url_get_query", T.Map(S, T.List(S)), [M], _query, member=True)


def _q_add(a: Mapping[str, Any], b: Any) -> dict[str, str]:
    other = Decimal(b) if isinstance(b, int) else v.quantity_value(b)
    return v.quantity_from_decimal(v.quantity_value(a) + other)


def _q_sub(a: Mapping[str, Any], b: Any) -> dict[str, str]:
    other = Decimal(b) if isinstance(b, int) else v.quantity_value(b)
    return v.quantity_from_decimal(v.quantity_value(a) - other)


def _as_integer(q: Mapping[str, Any]) -> int:
    value = v.quantity_value(q)
    if value != value.to_integral_value() or abs(value) >= 2**63:
        raise v.CelFunctionError("cannot convert value to integer")
    return int(value)


def _is_integer(q: Mapping[str, Any]) -> bool:
    value = v.quantity_value(q)
    return value == value.to_integral_value() and abs(value) < 2**63


def _parses(parse: Callable[[str], object]) -> Callable[[str], bool]:
    """isQuantity, isSemver: does the conversion function accept the string?"""

    def check(s: str) -> bool:
        try:
            parse(s)
        except v.CelFunctionError:
            return False
        return True

    return check


def _quantities(d: _Decls) -> None:
    M, B = DYN_MAP, T.BOOL
    d.add("quantity", "string_to_quantity", M, [T.STRING], v.quantity_of)
    d.add("isQuantity", "is_quantity_string", B, [T.STRING], _parses(v.quantity_of))
    d.add(
        "sign",
        "quantity_sign",
        T.INT,
        [M],
        lambda q: int(v.quantity_value(q).compare(0)),
        member=True,
    )
    d.add("isInteger", "quantity_is_integer", B, [M], _is_integer, member=True)
    d.add("asInteger", "quantity_get_int", T.INT, [M], _as_integer, member=True)
    d.add(
        "asApproximateFloat", "quantity_get_float", T.DOUBLE, [M],
        lambda q: float(v.quantity_value(q)), member=True,
    )  # fmt: skip
    d.add("add", "quantity_add", M, [M, M], _q_add, member=True)
    d.add("add", "quantity_add_int", M, [M, T.INT], _q_add, member=True)
    d.add("sub", "quantity_sub", M, [M, M], _q_sub, member=True)
    d.add("sub", "quantity_sub_int", M, [M, T.INT], _q_sub, member=True)
    # Shared by quantity and semver (both are maps here): dispatched on the value's tag.
    d.add(
        "isGreaterThan",
        "k8s_is_greater_than",
        B,
        [M, M],
        lambda a, b: v.compare(a, b) > 0,
        member=True,
    )
    d.add(
        "isLessThan", "k8s_is_less_than", B, [M, M], lambda a, b: v.compare(a, b) < 0, member=True
    )
    d.add("compareTo", "k8s_compare_to", T.INT, [M, M], v.compare, member=True)


def _contains_ip(c: Mapping[str, Any], ip: Any) -> bool:
    addr = v.ip_value(v.ip_of(ip) if isinstance(ip, str) else ip)
    return addr in v.cidr_value(c).network


def _contains_cidr(c: Mapping[str, Any], other: Any) -> bool:
    inner = v.cidr_value(v.cidr_of(other) if isinstance(other, str) else other).network
    outer = v.cidr_value(c).network
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def _masked(c: Mapping[str, Any]) -> dict[str, str]:
    return {v.CIDR: str(v.cidr_value(c).network)}


def _ips(d: _Decls) -> None:
    S, M, B = T.STRING, DYN_MAP, T.BOOL
    d.add("ip", "string_to_ip", M, [S], v.ip_of)
    d.add("ip", "cidr_ip", M, [M], lambda c: {v.IP: str(v.cidr_value(c).ip)}, member=True)
    d.add("isIP", "is_ip", B, [S], v.is_ip)
    d.add("ip.isCanonical", "ip_is_canonical", B, [S], lambda s: str(v.ip_value(v.ip_of(s))) == s)
    d.add("family", "ip_family", T.INT, [M], lambda i: v.ip_value(i).version, member=True)
    checks: dict[str, Callable[[Any], bool]] = {
        "isUnspecified": lambda a: a.is_unspecified,
        "isLoopback": lambda a: a.is_loopback,
        "isLinkLocalMulticast": lambda a: (
            (a.version == 4 and a in _V4_LL_MCAST) or (a.version == 6 and a in _V6_LL_MCAST)
        ),
        "isLinkLocalUnicast": lambda a: a.is_link_local and not a.is_multicast,
        "isGlobalUnicast": lambda a: (
            not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local)
            and str(a) != "255.255.255.255"
        ),
    }
    for name, check in checks.items():
        d.add(name, f"ip_{name}", B, [M], lambda i, f=check: f(v.ip_value(i)), member=True)
    d.add("cidr", "string_to_cidr", M, [S], v.cidr_of)
    d.add("isCIDR", "is_cidr", B, [S], v.is_cidr)
    d.add("containsIP", "cidr_contains_ip_string", B, [M, S], _contains_ip, member=True)
    d.add("containsIP", "cidr_contains_ip_ip", B, [M, M], _contains_ip, member=True)
    d.add("containsCIDR", "cidr_contains_cidr_string", B, [M, S], _contains_cidr, member=True)
    d.add("containsCIDR", "cidr_contains_cidr", B, [M, M], _contains_cidr, member=True)
    d.add(
        "prefixLength",
        "cidr_prefix_length",
        T.INT,
        [M],
        lambda c: v.cidr_value(c).network.prefixlen,
        member=True,
    )
    d.add("masked", "cidr_masked", M, [M], _masked, member=True)


def _semvers(d: _Decls) -> None:
    M, N = DYN_MAP, T.INT
    d.add("semver", "string_to_semver", M, [T.STRING], v.semver_of)
    d.add("isSemver", "is_semver", T.BOOL, [T.STRING], _parses(v.semver_of))
    d.add("major", "semver_major", N, [M], lambda s: v.semver_parts(s)[0], member=True)
    d.add("minor", "semver_minor", N, [M], lambda s: v.semver_parts(s)[1], member=True)
    d.add("patch", "semver_patch", N, [M], lambda s: v.semver_parts(s)[2], member=True)


def _in_all(xs: Iterable[Any], ys: Iterable[Any]) -> bool:
    items = list(xs)
    return all(_index_of(items, y) >= 0 for y in ys)


def _sets(d: _Decls) -> None:
    B = T.BOOL
    d.add("sets.contains", "list_sets_contains_list", B, [LIST, LIST], _in_all)
    d.add(
        "sets.equivalent", "list_sets_equivalent_list", B, [LIST, LIST],
        lambda a, b: _in_all(a, b) and _in_all(b, a),
    )  # fmt: skip
    d.add(
        "sets.intersects", "list_sets_intersects_list", B, [LIST, LIST],
        lambda a, b: any(_index_of(list(a), y) >= 0 for y in b),
    )  # fmt: skip


def kubernetes_functions() -> list[Any]:
    """Every Kubernetes library function, as cel-expr-python FunctionDecls."""
    d = _Decls()
    for add in (_lists, _strings, _regexes, _urls, _quantities, _ips, _semvers, _sets):
        add(d)
    return d.decls()


import ipaddress as _ipa  # noqa: E402 - constants for the ip checks above

_V4_LL_MCAST = _ipa.ip_network("224.0.0.0/24")
_V6_LL_MCAST = _ipa.ip_network("ff02::/16")
