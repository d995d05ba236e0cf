"""RFC 6902 JSON patch: behaviour beyond the shared vectors (errors, immutability)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gitkrm.errors import BadRequest, Invalid
from gitkrm.patch import apply_json_patch


def doc() -> dict[str, Any]:
    return {"a": {"b": [1, 2, 3], "c": {"d": 1}}, "e": {"f": "g"}, "x/y": 1, "m~n": 2}


def test_input_is_not_changed_and_untouched_subtrees_are_shared() -> None:
    d = doc()
    before = copy.deepcopy(d)
    out = apply_json_patch(
        d,
        [
            {"op": "add", "path": "/a/b/-", "value": 4},
            {"op": "replace", "path": "/a/c/d", "value": 2},
            {"op": "remove", "path": "/a/b/0"},
        ],
    )
    assert d == before
    assert out["a"] == {"b": [2, 3, 4], "c": {"d": 2}}
    assert out["e"] is d["e"]


def test_pointer_escapes() -> None:
    out = apply_json_patch(
        doc(),
        [
            {"op": "replace", "path": "/x~1y", "value": 10},
            {"op": "test", "path": "/m~0n", "value": 2},
        ],
    )
    assert out["x/y"] == 10


def test_copy_does_not_alias_the_source() -> None:
    out = apply_json_patch(
        doc(),
        [
            {"op": "copy", "from": "/a/c", "path": "/copied"},
            {"op": "replace", "path": "/copied/d", "value": 99},
        ],
    )
    assert out["a"]["c"] == {"d": 1}
    assert out["copied"] == {"d": 99}


def test_move_and_whole_document_replace() -> None:
    out = apply_json_patch(doc(), [{"op": "move", "from": "/a/b", "path": "/b"}])
    assert out["b"] == [1, 2, 3]
    assert "b" not in out["a"]
    assert apply_json_patch(doc(), [{"op": "replace", "path": "", "value": [1]}]) == [1]


def test_test_compares_numbers_by_value_and_types_strictly() -> None:
    apply_json_patch({"n": 1}, [{"op": "test", "path": "/n", "value": 1.0}])
    with pytest.raises(Invalid):
        apply_json_patch({"n": 1}, [{"op": "test", "path": "/n", "value": True}])


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/a/zz", "value": 1}],
        [{"op": "add", "path": "/nope/x", "value": 1}],
        [{"op": "test", "path": "/a/c/d", "value": 2}],
        [{"op": "move", "from": "/a", "path": "/a/c/inner"}],
        [{"op": "add", "path": "/a/b/01", "value": 1}],
        [{"op": "add", "path": "/a/b/4", "value": 1}],
        [{"op": "remove", "path": "/a/b/-"}],
        [{"op": "frobnicate", "path": "/a"}],
        [{"op": "add", "path": "/a"}],
        [{"op": "add", "path": "a", "value": 1}],
        [{"op": "add", "path": "/a~2", "value": 1}],
    ],
)
def test_failing_operations_are_unprocessable(ops: list[dict[str, Any]]) -> None:
    d = doc()
    with pytest.raises(Invalid) as e:
        apply_json_patch(d, ops)
    assert e.value.code == 422
    assert d == doc()


def test_failure_midway_leaves_the_input_alone() -> None:
    d = doc()
    with pytest.raises(Invalid, match="operation 1"):
        apply_json_patch(
            d,
            [{"op": "replace", "path": "/a/c/d", "value": 5}, {"op": "remove", "path": "/zz"}],
        )
    assert d == doc()


@pytest.mark.parametrize("patch", [{"op": "add"}, "nope", [1], [None]])
def test_undecodable_patches_are_bad_requests(patch: Any) -> None:
    with pytest.raises(BadRequest):
        apply_json_patch(doc(), patch)


# ---- found by tests/fuzz/test_fuzz_patch.py ----


def test_copies_that_double_the_document_stop_at_the_copy_limit() -> None:
    # Each copy of /a into a new member of itself doubled it: 40 of these took hours and
    # all the memory before.
    ops = [{"op": "copy", "from": "/a", "path": f"/a/c{i}"} for i in range(40)]
    with pytest.raises(Invalid, match=r"copy more than 100,000 values"):
        apply_json_patch({"a": {"b": 1}}, ops)
    few = apply_json_patch({"a": {"b": 1}}, ops[:3])
    assert few["a"]["c2"] == {"b": 1, "c0": {"b": 1}, "c1": {"b": 1, "c0": {"b": 1}}}


def test_copies_cannot_nest_a_document_past_the_limit() -> None:
    # Each copy of /a into /a/c nested it one level deeper: RecursionError (a 500) before.
    ops = [{"op": "copy", "from": "/a", "path": "/a/c"}] * 1200
    with pytest.raises(Invalid, match=r"operation 198 .*nested more than 200 levels deep"):
        apply_json_patch({"a": {"b": 1}}, ops)


def test_values_placed_too_deep_are_refused() -> None:
    deep: Any = 1
    for _ in range(150):
        deep = [deep]
    doc = {"a": deep, "b": deep}
    inner = "/a" + "/0" * 149 + "/-"  # the innermost list of /a, 151 tokens down
    with pytest.raises(Invalid, match="nested more than 200 levels"):
        apply_json_patch(doc, [{"op": "add", "path": inner, "value": deep}])
    with pytest.raises(Invalid, match="nested more than 200 levels"):
        apply_json_patch(doc, [{"op": "move", "from": "/b", "path": inner}])
    assert apply_json_patch(doc, [{"op": "add", "path": inner, "value": [[1]]}])
