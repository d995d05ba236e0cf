"""Go-compatible value helpers and semantic equality."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.patch import PatchMeta, semantically_equal
from gitkrm.patch.values import dedupe_scalars, go_equal, go_float, go_sort_by, gofmt, hkey


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (2.5, "2.5"),
        (100000.0, "100000"),
        (1e6, "1e+06"),
        (123456789.0, "1.23456789e+08"),
        (0.0001, "0.0001"),
        (1e-05, "1e-05"),
        (-0.5, "-0.5"),
        (0.0, "0"),
    ],
)
def test_go_float_format(value: float, text: str) -> None:
    assert go_float(value) == text


def test_gofmt() -> None:
    assert gofmt("a") == "a"
    assert gofmt(None) == "<nil>"
    assert gofmt(True) == "true"
    assert gofmt(1000000) == "1000000"
    assert gofmt({"b": 1, "a": [1, "x"]}) == "map[a:[1 x] b:1]"


def test_go_equality_and_keys() -> None:
    assert go_equal({"a": [1, {"b": 2}]}, {"a": [1.0, {"b": 2.0}]})
    assert not go_equal({"a": True}, {"a": 1})
    assert not go_equal([1, 2], [2, 1])
    assert hkey(True) != hkey(1)
    assert hkey(1) == hkey(1.0)
    assert len({hkey(v) for v in (True, 1, 1.0, "1")}) == 3
    with pytest.raises(TypeError):
        hkey({})


def test_go_sort_reverses_equal_keys_like_insertion_sort() -> None:
    items = [("b", 1), ("a", 1), ("b", 2), ("a", 2)]
    assert go_sort_by(items, lambda t: t[0]) == [("a", 2), ("a", 1), ("b", 2), ("b", 1)]
    assert go_sort_by([10, 9, 1], gofmt) == [1, 10, 9]


def test_dedupe_follows_go_swap_order() -> None:
    assert dedupe_scalars([1, 2, 1, 3]) == [1, 2, 3]
    assert dedupe_scalars(["a", "a", "b", "c"]) == ["a", "c", "b"]
    assert dedupe_scalars([True, 1]) == [True, 1]


SCHEMAS: dict[str, Any] = {
    "Pod": {
        "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "emptyDir": {"$ref": "#/components/schemas/EmptyDir"},
            "requests": {
                "type": "object",
                "additionalProperties": {
                    "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"
                },
            },
            "data": {"type": "object", "additionalProperties": {"type": "string"}},
            "count": {"type": "integer"},
        }
    },
    "EmptyDir": {"properties": {"medium": {"type": "string"}}},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
}
META = PatchMeta.from_openapi(SCHEMAS, "Pod")


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ({"count": 1}, {"count": 1.0}, True),
        ({"count": 1}, {"count": True}, False),
        ({"requests": {"cpu": "500m"}}, {"requests": {"cpu": 0.5}}, True),
        ({"requests": {"memory": "1Gi"}}, {"requests": {"memory": "1024Mi"}}, True),
        ({"requests": {"cpu": "1"}}, {"requests": {"cpu": 1}}, True),
        ({"requests": {"cpu": "1"}}, {"requests": {"cpu": "2"}}, False),
        ({"data": {"cpu": "500m"}}, {"data": {"cpu": "0.5"}}, False),
        ({"labels": {}}, {}, True),
        ({"labels": None}, {}, True),
        ({"args": []}, {}, True),
        ({"emptyDir": {}}, {}, False),
        ({"emptyDir": {}}, {"emptyDir": {}}, True),
        ({"args": ["a", "b"]}, {"args": ["b", "a"]}, False),
        ({"unknown": {}}, {}, False),
    ],
)
def test_semantically_equal(a: dict[str, Any], b: dict[str, Any], equal: bool) -> None:
    assert semantically_equal(a, b, META) is equal
    assert semantically_equal(b, a, META) is equal


def test_semantically_equal_without_meta_knows_only_numbers() -> None:
    assert semantically_equal({"a": 1}, {"a": 1.0})
    assert not semantically_equal({"a": "500m"}, {"a": 0.5})
    assert semantically_equal(1, 1.0)
    assert not semantically_equal(True, 1)
