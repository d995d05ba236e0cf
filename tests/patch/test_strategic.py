"""Strategic merge patch: directives, errors, conflicts and sharing (beyond the vectors)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gitkrm.errors import BadRequest, Conflict, Invalid
from gitkrm.patch import (
    PatchMeta,
    apply_strategic_merge_patch,
    create_three_way_merge_patch,
    create_two_way_merge_patch,
)

ITEM: dict[str, Any] = {
    "properties": {
        "name": {"type": "string"},
        "value": {"type": "string"},
        "replicas": {"type": "integer"},
        "items": {
            "type": "array",
            "items": {"$ref": "#/components/schemas/Item"},
            "x-kubernetes-patch-strategy": "merge",
            "x-kubernetes-patch-merge-key": "name",
        },
        "finalizers": {
            "type": "array",
            "items": {"type": "string"},
            "x-kubernetes-patch-strategy": "merge",
        },
        "atomic": {"type": "array", "items": {"type": "string"}},
        "child": {"$ref": "#/components/schemas/Item"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "empty": {"type": "object", "properties": {"medium": {"type": "string"}}},
        "grid": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
    }
}
META = PatchMeta.from_openapi({"components": {"schemas": {"Item": ITEM}}}, "Item")


def test_apply_does_not_change_inputs_and_shares_untouched_subtrees() -> None:
    doc: dict[str, Any] = {
        "child": {"name": "c", "labels": {"a": "1"}},
        "items": [{"name": "x"}],
        "value": "v",
    }
    patch = {"child": {"value": "new"}, "items": [{"name": "y"}]}
    before = copy.deepcopy((doc, patch))
    out = apply_strategic_merge_patch(doc, patch, META)
    assert (doc, patch) == before
    assert out["child"] == {"name": "c", "labels": {"a": "1"}, "value": "new"}
    assert out["child"]["labels"] is doc["child"]["labels"]
    # Without $setElementOrder apimachinery puts new items before the live-only ones.
    assert out["items"] == [{"name": "y"}, {"name": "x"}]
    assert out["items"][1] is doc["items"][0]


def test_patch_directives_on_maps_and_list_items() -> None:
    doc = {
        "child": {"name": "c", "value": "v"},
        "items": [{"name": "a", "value": "1"}, {"name": "b"}],
        "finalizers": ["x", "y", "z"],
    }
    out = apply_strategic_merge_patch(
        doc,
        {
            "child": {"$patch": "replace", "value": "only"},
            "items": [{"name": "a", "$patch": "delete"}, {"name": "c"}],
            "$deleteFromPrimitiveList/finalizers": ["y"],
        },
        META,
    )
    assert out == {
        "child": {"value": "only"},
        "items": [{"name": "c"}, {"name": "b"}],
        "finalizers": ["x", "z"],
    }
    out = apply_strategic_merge_patch(doc, {"items": [{"$patch": "replace"}, {"name": "n"}]}, META)
    assert out["items"] == [{"name": "n"}]
    assert apply_strategic_merge_patch(doc, {"child": {"$patch": "delete"}}, META)["child"] == {}
    merged = apply_strategic_merge_patch(doc, {"child": {"$patch": "merge", "value": "w"}}, META)
    assert merged["child"] == {"name": "c", "value": "w"}


def test_set_element_order_and_primitive_merge() -> None:
    doc = {"finalizers": ["a", "b"], "items": [{"name": "x"}, {"name": "y"}]}
    patch = {
        "$setElementOrder/finalizers": ["c", "b", "a"],
        "finalizers": ["c"],
        "$setElementOrder/items": [{"name": "y"}, {"name": "x"}],
    }
    out = apply_strategic_merge_patch(doc, patch, META)
    assert out["finalizers"] == ["c", "b", "a"]
    assert out["items"] == [{"name": "y"}, {"name": "x"}]


def test_directives_in_new_subtrees_do_not_leak_into_the_result() -> None:
    patch = {
        "child": {
            "$setElementOrder/items": [{"name": "a"}],
            "items": [{"name": "a", "value": None}],
            "$retainKeys": ["items"],
            "value": None,
        }
    }
    out = apply_strategic_merge_patch({}, patch, META)
    assert out == {"child": {"items": [{"name": "a"}]}}


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"child": {"$patch": "explode"}}, "child: unknown patch type: explode"),
        ({"items": [{"value": "no key"}]}, "items: map: map.* does not contain declared merge key"),
        ({"child": {"items": [{"$patch": "merge", "name": "a"}]}}, "child.items: merging lists"),
        ({"$retainKeys": "name"}, "invalid patch format of retainKeys"),
        ({"$retainKeys": ["name"], "value": "x"}, "invalid patch format of retainKeys"),
        ({"$deleteFromPrimitiveListfinalizers": ["a"]}, "invalid patch format of primitive list"),
        ({"items": [{"name": "a"}, "b"]}, "items: list element types are not identical"),
    ],
)
def test_malformed_patches_are_bad_requests_naming_the_field(
    patch: dict[str, Any], message: str
) -> None:
    doc = {"child": {"items": [{"name": "a"}]}, "items": [{"name": "a"}], "finalizers": ["a"]}
    with pytest.raises(BadRequest, match=message):
        apply_strategic_merge_patch(doc, patch, META)


def test_list_of_lists_is_unprocessable() -> None:
    with pytest.raises(Invalid, match="lists of lists"):
        apply_strategic_merge_patch({"finalizers": [["a"]]}, {"finalizers": [["b"]]}, META)


def test_null_document_is_empty_and_non_objects_are_rejected() -> None:
    assert apply_strategic_merge_patch(None, {"value": "x"}, META) == {"value": "x"}
    with pytest.raises(BadRequest, match="invalid JSON document"):
        apply_strategic_merge_patch([], {}, META)  # type: ignore[arg-type]


def test_three_way_conflict_names_the_field() -> None:
    original = {"replicas": 1, "child": {"value": "a"}}
    modified = {"replicas": 1, "child": {"value": "b"}}
    current = {"replicas": 1, "child": {"value": "c"}}
    with pytest.raises(Conflict, match=r'"child\.value"'):
        create_three_way_merge_patch(original, modified, current, META, overwrite=False)
    patch = create_three_way_merge_patch(original, modified, current, META, overwrite=True)
    assert patch == {"child": {"value": "b"}}


def test_three_way_conflict_inside_a_merge_list_names_the_item() -> None:
    original = {"items": [{"name": "a", "value": "1"}]}
    modified = {"items": [{"name": "a", "value": "2"}]}
    current = {"items": [{"name": "a", "value": "3"}]}
    with pytest.raises(Conflict, match=r"items\[name=a\]\.value"):
        create_three_way_merge_patch(original, modified, current, META, overwrite=False)


def test_same_change_on_both_sides_is_not_a_conflict() -> None:
    original = {"replicas": 1}
    modified = {"replicas": 2}
    current = {"replicas": 2, "value": "server"}
    assert create_three_way_merge_patch(original, modified, current, META, overwrite=False) == {}


def test_semantic_mode_ignores_empty_maps_and_nulls_but_not_empty_structs() -> None:
    live = {"name": "n"}
    for desired in (
        {"name": "n", "labels": {}},
        {"name": "n", "items": []},
        {"name": "n", "value": None},
    ):
        assert create_three_way_merge_patch(desired, desired, live, META) == {}
        assert create_three_way_merge_patch(desired, desired, live, META, semantic=False) != {}
    desired = {"name": "n", "empty": {}}
    assert create_three_way_merge_patch(desired, desired, live, META) == {"empty": {}}


def test_semantic_mode_numbers() -> None:
    assert create_two_way_merge_patch({"replicas": 1}, {"replicas": 1.0}, META) == {}
    assert create_two_way_merge_patch({"replicas": 1}, {"replicas": True}, META) == {
        "replicas": True
    }


def test_malformed_manifest_in_three_way_names_the_field() -> None:
    with pytest.raises(
        BadRequest, match=r"child\.items: map: .* does not contain declared merge key: name"
    ):
        create_three_way_merge_patch(
            {}, {"child": {"items": [{"value": "x"}]}}, {"child": {"items": [{"name": "a"}]}}, META
        )
