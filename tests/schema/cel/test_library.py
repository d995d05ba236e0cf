"""The Kubernetes CEL libraries over cel-expr-python: each function against the value
Kubernetes' own library gives (k8s.io/apiserver/pkg/cel/library tests)."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.schema.cel.runtime import CelError, compile_expression

VARS = frozenset({"self"})


def ev(source: str, self: Any = None) -> Any:
    return compile_expression(source, VARS).evaluate({"self": self})


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("[1, 2, 3].isSorted()", True),
        ("['b', 'a'].isSorted()", False),
        ("[1, 2, 3].sum()", 6),
        ("[1.5, 2.5].sum()", 4.0),
        ("[3, 1, 2].min()", 1),
        ("['a', 'c'].max()", "c"),
        ("[1, 2, 1].indexOf(1)", 0),
        ("[1, 2, 1].lastIndexOf(1)", 2),
        ("['a'].indexOf('b')", -1),
        ("'hello'.charAt(1)", "e"),
        ("'hello'.indexOf('l')", 2),
        ("'hello'.lastIndexOf('l')", 3),
        ("'HeLLo'.lowerAscii()", "hello"),
        ("'hello'.upperAscii()", "HELLO"),
        ("'a-b-c'.replace('-', '+')", "a+b+c"),
        ("'a-b-c'.replace('-', '+', 1)", "a+b-c"),
        ("'a,b,c'.split(',')", ["a", "b", "c"]),
        ("'a,b,c'.split(',', 2)", ["a", "b,c"]),
        ("'hello'.substring(1, 3)", "el"),
        ("'  x '.trim()", "x"),
        ("['a', 'b'].join('-')", "a-b"),
        ("'abc'.reverse()", "cba"),
        ("'abc 123'.find('[0-9]+')", "123"),
        ("'a1 b22'.findAll('[0-9]+')", ["1", "22"]),
        ("isURL('https://example.com:8443/p?a=1')", True),
        ("isURL('not a url')", False),
        ("url('https://user@example.com:8443/p').getHost()", "example.com:8443"),
        ("url('https://example.com:8443/p').getHostname()", "example.com"),
        ("url('https://[::1]:80/').getHostname()", "::1"),
        ("url('https://example.com:8443/p').getPort()", "8443"),
        ("url('https://example.com/a/b').getEscapedPath()", "/a/b"),
        ("url('https://e.com/?k=v&k=w').getQuery()", {"k": ["v", "w"]}),
        ("quantity('1Gi').isGreaterThan(quantity('1000Mi'))", True),
        ("quantity('500m').isLessThan(quantity('1'))", True),
        ("quantity('1').compareTo(quantity('1000m'))", 0),
        ("quantity('1').add(quantity('500m')).isGreaterThan(quantity('1400m'))", True),
        ("quantity('2').sub(1).asInteger()", 1),
        ("quantity('1.5').isInteger()", False),
        ("quantity('-1').sign()", -1),
        ("quantity('250m').asApproximateFloat()", 0.25),
        ("isQuantity('1Gi')", True),
        ("isQuantity('1GiB')", False),
        ("isIP('10.0.0.1')", True),
        ("isIP('::ffff:1.2.3.4')", False),
        ("ip('10.0.0.1').family()", 4),
        ("ip('::1').isLoopback()", True),
        ("ip('0.0.0.0').isUnspecified()", True),
        ("ip('8.8.8.8').isGlobalUnicast()", True),
        ("ip('fe80::1').isLinkLocalUnicast()", True),
        ("ip.isCanonical('2001:db8::1')", True),
        ("ip.isCanonical('2001:DB8::1')", False),
        ("cidr('10.0.0.0/8').containsIP('10.1.2.3')", True),
        ("cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))", False),
        ("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", True),
        ("cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')", True),
        ("cidr('10.0.0.0/8').prefixLength()", 8),
        ("cidr('10.0.0.1/8').ip() == ip('10.0.0.1')", True),
        ("isCIDR('10.0.0.0/33')", False),
        ("semver('1.2.3').major()", 1),
        ("semver('1.2.3-rc.1').isLessThan(semver('1.2.3'))", True),
        ("semver('1.10.0').isGreaterThan(semver('1.9.9'))", True),
        ("isSemver('v1.2.3')", False),
        ("sets.contains([1, 2, 3], [1, 2])", True),
        ("sets.equivalent([1, 2], [2, 1, 1])", True),
        ("sets.intersects([1, 2], [3])", False),
    ],
)
def test_library_function(source: str, expected: Any) -> None:
    assert ev(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "quantity('1GiB')",
        "url('::')",
        "ip('300.0.0.1')",
        "cidr('10.0.0.0')",
        "semver('1.2')",
        "[].min()",
    ],
)
def test_out_of_domain_is_an_evaluation_error(source: str) -> None:
    with pytest.raises(CelError):
        ev(source)


def test_a_compile_error_names_the_place() -> None:
    with pytest.raises(CelError, match=r"<input>:1:\d+"):
        compile_expression("self.x ==", VARS)


def test_the_iteration_guard_stops_a_runaway_rule() -> None:
    nested = "self.all(a, self.all(b, self.all(c, true)))"
    with pytest.raises(CelError, match="actual cost limit exceeded"):
        ev(nested, list(range(300)))


def test_programs_are_compiled_once_per_source() -> None:
    assert compile_expression("self > 1", VARS) is compile_expression("self > 1", VARS)
