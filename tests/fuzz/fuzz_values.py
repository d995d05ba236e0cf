"""Strategies shared by the fuzz targets: JSON-like values and text with the characters
that parsers treat specially."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Final, TypeVar

from hypothesis import strategies as st

from gitkrm.errors import GitkrmError

T = TypeVar("T")

# Integers a JSON document may carry: int64, uint64, and beyond (Python reads them all).
INTEGERS: Final = st.one_of(
    st.integers(-5, 5),
    st.integers(-(2**63), 2**64 - 1),
    st.integers(-(2**80), 2**80),
)
FLOATS: Final = st.floats(allow_nan=False, allow_infinity=False)
SHORT_TEXT: Final = st.text(max_size=10)


def json_values(
    keys: st.SearchStrategy[str] = SHORT_TEXT,
    scalars: st.SearchStrategy[Any] | None = None,
    *,
    max_leaves: int = 20,
) -> st.SearchStrategy[Any]:
    """Any JSON value (null, bool, numbers, strings, lists, objects), nested."""
    leaves = scalars
    if leaves is None:
        leaves = st.one_of(st.none(), st.booleans(), INTEGERS, FLOATS, SHORT_TEXT)
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def json_objects(
    keys: st.SearchStrategy[str] = SHORT_TEXT, *, max_leaves: int = 20
) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(keys, json_values(keys, max_leaves=max_leaves), max_size=5)


def _is_json(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str | dict | list)


def call_unchanged(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call `fn`; fail if it changed any JSON-like argument (deep comparison, types too)."""
    data = [(i, a) for i, a in enumerate(args) if _is_json(a)]
    before = copy.deepcopy(data)
    try:
        return fn(*args, **kwargs)
    finally:
        for (i, a), (_, b) in zip(data, before, strict=True):
            assert same(a, b), f"{fn.__name__} changed its argument {i}: {b!r} became {a!r}"


def same(a: Any, b: Any) -> bool:
    """Deep equality that tells 1 from 1.0 and True from 1 (== does not)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def only_gitkrm_errors(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | GitkrmError:
    """The result of `fn`, or the gitkrm error it raised; any other exception fails."""
    try:
        return fn(*args, **kwargs)
    except GitkrmError as e:
        error = e
    assert error.message, f"{type(error).__name__} without a message"
    return error
