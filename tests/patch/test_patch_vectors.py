"""Every case of the shared Kubernetes / RFC vectors, checked the way vectors/README.md says.

The strategic cases are checked twice: in Go-exact mode (`semantic=False`: the patch must
equal Go's byte for byte, and applying it must give Go's result), and in the default
semantic mode, where the patch may omit no-op parts but applying it must still give
Go's result.

No case is skipped as Go-only. The two that looked Go-only (three-way cases 40 and 41,
"add map and delete map from merging list") get their expected order from Go slice
aliasing; `gitkrm.patch.aliasing` reproduces it. Of the four json-patch records marked
`disabled` upstream, the two with duplicate `op` members are skipped (no JSON parser
keeps both keys, so they cannot be expressed); the other two are run anyway.
"""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import Conflict, GitkrmError
from gitkrm.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    create_three_way_json_merge_patch,
    create_three_way_merge_patch,
    create_two_way_merge_patch,
)
from tests.patch.patch_vectors import load, merge_item_meta, same, sort_merge_lists

THREE_WAY = load("strategic-merge-three-way.json")
APPLY = load("strategic-merge-apply.json")
SORT = load("strategic-merge-sort.json")
JSON_MERGE = load("json-merge-three-way.json")
RFC7396 = load("json-merge-patch-rfc7396.json")
JSON_PATCH = [
    *(("tests", i, r) for i, r in enumerate(load("json-patch-tests.json"))),
    *(("spec", i, r) for i, r in enumerate(load("json-patch-spec-tests.json"))),
]


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [f"{i}-{c['description'][:60]}" for i, c in enumerate(cases)]


def _prep(case: dict[str, Any], field: str) -> Any:
    value = case[field]
    if case["compare"] == "sorted":
        return sort_merge_lists(value, merge_item_meta())
    return value


def _check_three_way(case: dict[str, Any], *, semantic: bool) -> None:
    meta = merge_item_meta()
    o, m, c = _prep(case, "original"), _prep(case, "modified"), _prep(case, "current")
    expected_result = _prep(case, "result")
    try:
        patch = create_three_way_merge_patch(o, m, c, meta, overwrite=False, semantic=semantic)
    except Conflict:
        assert case["expectConflict"], "unexpected conflict"
        assert case["result"] is not None
        patch = create_three_way_merge_patch(o, m, c, meta, overwrite=True, semantic=semantic)
    else:
        assert not case["expectConflict"], "expected conflict did not occur"
    if not semantic:
        assert same(patch, _prep(case, "threeWay")), patch
    assert same(apply_strategic_merge_patch(c, patch, meta), expected_result)


@pytest.mark.parametrize("case", THREE_WAY, ids=_ids(THREE_WAY))
def test_three_way_go_exact(case: dict[str, Any]) -> None:
    _check_three_way(case, semantic=False)


@pytest.mark.parametrize("case", THREE_WAY, ids=_ids(THREE_WAY))
def test_three_way_semantic(case: dict[str, Any]) -> None:
    _check_three_way(case, semantic=True)


@pytest.mark.parametrize("semantic", [False, True])
@pytest.mark.parametrize("case", THREE_WAY, ids=_ids(THREE_WAY))
def test_two_way(case: dict[str, Any], semantic: bool) -> None:
    meta = merge_item_meta()
    o, m = _prep(case, "original"), _prep(case, "modified")
    patch = create_two_way_merge_patch(o, m, meta, semantic=semantic)
    if not semantic:
        assert same(patch, _prep(case, "twoWay")), patch
    expected = _prep(case, "twoWayResult") if case["twoWayResult"] is not None else m
    assert same(apply_strategic_merge_patch(o, patch, meta), expected)


@pytest.mark.parametrize("case", APPLY, ids=_ids(APPLY))
def test_strategic_apply(case: dict[str, Any]) -> None:
    meta = merge_item_meta()
    original, patch = _prep(case, "original"), _prep(case, "patch")
    if case["expectedError"]:
        with pytest.raises(GitkrmError, match=case["expectedError"]):
            apply_strategic_merge_patch(original, patch, meta)
        return
    assert same(apply_strategic_merge_patch(original, patch, meta), _prep(case, "modified"))


@pytest.mark.parametrize("case", SORT, ids=_ids(SORT))
def test_sort_merge_lists_harness(case: dict[str, Any]) -> None:
    """The harness' own port of Go's sortMergeListsByName, against Go's answers."""
    assert same(sort_merge_lists(case["original"], merge_item_meta()), case["sorted"])


@pytest.mark.parametrize("case", JSON_MERGE, ids=_ids(JSON_MERGE))
def test_json_merge_three_way(case: dict[str, Any]) -> None:
    patch = create_three_way_json_merge_patch(case["original"], case["modified"], case["current"])
    assert same(patch, case["threeWay"])
    assert same(apply_merge_patch(case["current"] or {}, patch), case["result"])


@pytest.mark.parametrize("case", RFC7396, ids=[str(i) for i in range(len(RFC7396))])
def test_rfc7396(case: dict[str, Any]) -> None:
    assert same(apply_merge_patch(case["target"], case["patch"]), case["result"])


@pytest.mark.parametrize(
    "record", JSON_PATCH, ids=[f"{s}-{i}-{r.get('comment', '')[:40]}" for s, i, r in JSON_PATCH]
)
def test_json_patch(record: tuple[str, int, dict[str, Any]]) -> None:
    _, _, r = record
    if r.get("disabled") and "two 'op' members" in r.get("error", ""):
        pytest.skip("duplicate JSON keys cannot be expressed once parsed")
    if "error" in r:
        with pytest.raises(GitkrmError):
            apply_json_patch(r["doc"], r["patch"])
        return
    result = apply_json_patch(r["doc"], r["patch"])
    if "expected" in r:
        assert same(result, r["expected"])
