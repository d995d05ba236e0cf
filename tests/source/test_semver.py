"""Helm's version constraints (Masterminds/semver), as dependencies use them."""

from __future__ import annotations

import pytest

from gitkrm.errors import BadRequest
from gitkrm.source.semver import Constraint, Version, newest

VERSIONS = ["0.1.0", "0.1.5", "0.2.0", "1.0.0", "1.2.3", "1.2.10", "1.3.0", "2.0.0", "2.1.0-rc.1"]


@pytest.mark.parametrize(
    ("constraint", "picked"),
    [
        ("^1.2", "1.3.0"),
        ("~1.2", "1.2.10"),
        ("1.2.x", "1.2.10"),
        ("1.2.*", "1.2.10"),
        (">=1.0 <2", "1.3.0"),
        (">=1.0, <2", "1.3.0"),
        ("*", "2.0.0"),
        ("", "2.0.0"),
        ("^0.1", "0.1.5"),
        ("^0.1.2", "0.1.5"),
        ("1.2.3", "1.2.3"),
        ("=1.2", "1.2.10"),
        ("1.0 - 1.2", "1.2.10"),
        ("<1 || >=2", "2.0.0"),
        (">2.0.0-0", "2.1.0-rc.1"),  # a pre-release only when the constraint names one
        ("~2", "2.0.0"),
        ("!=2.0.0", "1.3.0"),
        (">3", None),
    ],
)
def test_the_newest_allowed_version(constraint: str, picked: str | None) -> None:
    assert newest(VERSIONS, constraint) == picked


def test_order_and_parsing() -> None:
    assert Version.parse("1.0.0-rc.1") < Version.parse("1.0.0")
    assert (
        Version.parse("1.0.0-alpha") < Version.parse("1.0.0-alpha.1") < Version.parse("1.0.0-beta")
    )
    assert Version.parse("v1.2") == Version.parse("1.2.0")
    assert str(Version.parse("1.2.3-rc.1+build")) == "1.2.3-rc.1"
    with pytest.raises(BadRequest, match="not a semantic version"):
        Version.parse("latest")
    with pytest.raises(BadRequest, match="is not a version"):
        newest(VERSIONS, ">= banana")


@pytest.mark.parametrize(
    ("constraint", "version", "allowed"),
    [
        (">=1.0.0-0 <2.0.0-0", "1.5.0-rc.1", True),
        (">=1.0.0-0 <2.0.0", "1.5.0-rc.1", False),  # Masterminds checks each comparator
        (">=1.0.0-0 <2.0.0", "1.5.0", True),
        ("*-0", "0.1.0-alpha", True),
        ("*", "0.1.0-alpha", False),
        ("~>1.2", "1.2.9", True),
        ("=>1.2", "1.2.0", True),
        ("=<1.2.0", "1.2.1", False),
        ("^1.2.3-beta.1", "1.4.0-alpha", True),
    ],
)
def test_pre_releases_and_operator_spellings(constraint: str, version: str, allowed: bool) -> None:
    assert Constraint.parse(constraint).allows(Version.parse(version)) is allowed


def test_of_equal_versions_the_last_in_sorted_order() -> None:
    assert newest(["v1.0.0", "1.0.0", "0.9.0"], "1.x") == "v1.0.0"
