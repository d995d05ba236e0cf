"""JSON merge patch and its three-way form (beyond the shared vectors)."""

from __future__ import annotations

import copy

import pytest

from gitkrm.errors import Conflict
from gitkrm.patch import (
    apply_merge_patch,
    create_merge_patch,
    create_three_way_json_merge_patch,
)
from gitkrm.patch.mergepatch import has_conflicts


def test_create_merge_patch_lists_are_atomic_and_types_strict() -> None:
    a = {"l": [1, 2], "m": {"x": 1, "y": True}, "gone": 1}
    b = {"l": [1, 2, 3], "m": {"x": 1.0, "y": 1}, "new": {"z": []}}
    assert create_merge_patch(a, b) == {
        "l": [1, 2, 3],
        "m": {"y": 1},
        "new": {"z": []},
        "gone": None,
    }


def test_apply_merge_patch_does_not_change_inputs_and_shares_untouched() -> None:
    doc = {"a": {"b": 1}, "c": {"d": [1]}}
    patch = {"a": {"b": None, "e": {"f": None, "g": 1}}}
    before = copy.deepcopy((doc, patch))
    out = apply_merge_patch(doc, patch)
    assert out == {"a": {"e": {"g": 1}}, "c": {"d": [1]}}
    assert out["c"] is doc["c"]
    assert (doc, patch) == before


def test_non_object_sides() -> None:
    assert create_merge_patch([1], {"a": 1}) == {"a": 1}
    assert apply_merge_patch({"a": 1}, [2]) == [2]
    assert apply_merge_patch("x", {"a": 1}) == {"a": 1}


def test_three_way_keeps_live_only_fields_and_deletes_dropped_ones() -> None:
    original = {"spec": {"a": 1, "b": 2}, "list": [1]}
    modified = {"spec": {"a": 5}, "list": [1]}
    current = {"spec": {"a": 1, "b": 2, "server": "x"}, "list": [1, 2], "status": {"ok": True}}
    patch = create_three_way_json_merge_patch(original, modified, current)
    assert patch == {"spec": {"a": 5, "b": None}, "list": [1]}
    assert apply_merge_patch(current, patch) == {
        "spec": {"a": 5, "server": "x"},
        "list": [1],
        "status": {"ok": True},
    }


def test_three_way_identical_is_empty_and_none_means_empty() -> None:
    doc = {"a": {"b": [1]}}
    assert create_three_way_json_merge_patch(doc, copy.deepcopy(doc), doc) == {}
    assert create_three_way_json_merge_patch(None, {"a": 1}, None) == {"a": 1}


def test_has_conflicts() -> None:
    assert not has_conflicts({"a": {"b": 1}}, {"a": {"c": None}})
    assert has_conflicts({"a": 1}, {"a": None})
    assert has_conflicts({"a": [1]}, {"a": [1, 2]})
    assert has_conflicts({"a": True}, {"a": 1})
    assert not has_conflicts({"a": 1}, {"a": 1.0})


def test_three_way_conflict_is_a_conflict_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import gitkrm.patch.mergepatch as mp

    monkeypatch.setattr(mp, "has_conflicts", lambda _a, _b: True)
    with pytest.raises(Conflict):
        create_three_way_json_merge_patch({"a": 1}, {}, {})
