"""Kubernetes quantities: the grammar of apimachinery's resource.Quantity."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gitkrm.krm.quantity import (
    Quantity,
    QuantityError,
    is_quantity,
    parse_quantity,
    quantities_equal,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", Decimal("0.1")),
        ("1", Decimal(1)),
        ("1Ki", Decimal(1024)),
        ("1Gi", Decimal(2**30)),
        ("1.5Gi", Decimal(3 * 2**29)),
        ("1k", Decimal(1000)),
        ("1M", Decimal(10**6)),
        ("1e3", Decimal(1000)),
        ("1E-3", Decimal("0.001")),
        ("-2", Decimal(-2)),
        ("+2", Decimal(2)),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("250n", Decimal("0.00000025")),
        ("3u", Decimal("0.000003")),
    ],
)
def test_parse(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value
    assert is_quantity(text)


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "1GiB", "1 Gi", "Gi", "1Kb", "--1", "1e"])
def test_malformed(bad: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(bad)
    assert not is_quantity(bad)


def test_numbers_are_quantities_but_booleans_are_not() -> None:
    assert parse_quantity(3) == 3
    assert parse_quantity(0.5) == Decimal("0.5")
    assert not is_quantity(True)
    assert not is_quantity(None)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("1Gi", "1024Mi", True),
        ("500m", "0.5", True),
        ("1", 1, True),
        ("1000m", "1", True),
        ("1G", "1Gi", False),
        ("100m", "10m", False),
        ("abc", "abc", True),
        ("abc", "abd", False),
    ],
)
def test_quantities_equal(a: object, b: object, equal: bool) -> None:
    assert quantities_equal(a, b) is equal


@pytest.mark.parametrize(
    ("texts", "want"),
    [
        # resource.Quantity's String() of a parsed value and of sums (Add keeps the left
        # operand's format; a zero takes the other's).
        (["500m"], "500m"),
        (["0.5"], "500m"),
        (["2000m"], "2"),
        (["1000"], "1k"),
        (["1.5Gi"], "1536Mi"),
        (["1024Mi"], "1Gi"),
        (["512"], "512"),
        (["1e3"], "1e3"),
        (["500m", "500m"], "1"),
        (["1", "1"], "2"),
        (["128Mi", "128Mi"], "256Mi"),
        (["0", "64Mi"], "64Mi"),
        (["100m", "1"], "1100m"),
        (["0"], "0"),
    ],
)
def test_canonical_text_of_sums(texts: list[str], want: str) -> None:
    total = Quantity.of(texts[0])
    for t in texts[1:]:
        total = total + Quantity.of(t)
    assert str(total) == want
