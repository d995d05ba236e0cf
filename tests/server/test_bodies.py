"""decode_json: orjson's fast path must keep the stdlib reader's answers (duplicate keys
under Warn/Strict, errors, what orjson cannot read)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitkrm.errors import BadRequest
from gitkrm.krm import FieldValidation
from gitkrm.server.bodies import decode_json

WARN = FieldValidation.WARN


@pytest.mark.parametrize(
    ("body", "value", "dups"),
    [
        (b'{"a":1,"b":{"c":[1,2]}}', {"a": 1, "b": {"c": [1, 2]}}, []),
        (b'{"a":1,"a":2}', {"a": 2}, ["a"]),  # compact, as orjson writes it, yet duplicated
        (b'{"a":{"b":1,"b":1}}', {"a": {"b": 1}}, ["b"]),
        (b'{ "a": 1, "a": 1 }', {"a": 1}, ["a"]),
        (b'{"a":"\\u00e9"}', {"a": "\u00e9"}, []),  # escaped: not orjson's form
        (b'{"n":123456789012345678901234567890}', {"n": 123456789012345678901234567890}, []),
        (b'\xef\xbb\xbf{"a":1}', {"a": 1}, []),  # a BOM: the stdlib reader takes it
    ],
)
def test_values_and_duplicates(body: bytes, value: Any, dups: list[str]) -> None:
    assert decode_json(body, validation=WARN) == (value, dups)


@pytest.mark.parametrize("body", [b"{", b'{"a":NaN}', b'{"a":1}x', b"   "])
def test_invalid_json_is_a_bad_request(body: bytes) -> None:
    with pytest.raises(BadRequest):
        decode_json(body, validation=FieldValidation.STRICT)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.lists(st.tuples(st.sampled_from("abc"), inner), max_size=4)
    ),
    max_leaves=12,
)


def _encode(v: Any) -> bytes:
    """Compact JSON where a list of pairs is an object (so keys may repeat)."""
    if isinstance(v, list) and v and all(isinstance(p, tuple) for p in v):
        return b"{" + b",".join(orjson.dumps(k) + b":" + _encode(x) for k, x in v) + b"}"
    if isinstance(v, list):
        return b"[" + b",".join(_encode(x) for x in v) + b"]"
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v).encode()  # beyond 64 bits too
    return orjson.dumps(v)


def _expected(v: Any, found: list[str]) -> Any:
    if isinstance(v, list) and v and all(isinstance(p, tuple) for p in v):
        out: dict[str, Any] = {}
        for k, x in v:
            if k in out and k not in found:
                found.append(k)
            out[k] = _expected(x, found)
        return out
    if isinstance(v, list):
        return [_expected(x, found) for x in v]
    return v


@settings(max_examples=150, deadline=None)
@given(_json)
def test_duplicates_are_found_whatever_the_body(v: Any) -> None:
    body = _encode(v)
    found: list[str] = []
    expected = _expected(v, found)
    value, dups = decode_json(body, validation=WARN)
    assert value == expected
    assert sorted(dups) == sorted(found)


@pytest.mark.parametrize("depth", [201, 260, 1100])
@pytest.mark.parametrize("validation", list(FieldValidation))
def test_bodies_nested_deeper_than_the_store_takes_are_bad_requests(
    depth: int, validation: FieldValidation
) -> None:
    # Found by tests/fuzz/test_fuzz_http.py: orjson reads 1,024 levels but writes 254, so the
    # fast path's re-encoding raised TypeError (a 500), and shallower bodies became objects
    # that a list as a Table could not write.
    body = b'{"spec":' + b"[" * depth + b"]" * depth + b"}"
    with pytest.raises(BadRequest, match=r"nested too deeply \(more than 200 levels\)|not valid"):
        decode_json(body, validation=validation)
    assert decode_json(b'{"spec":' + b"[" * 199 + b"]" * 199 + b"}", validation=validation)
