"""Fuzzing the patch engine on arbitrary JSON documents: JSON patch, merge patch, strategic
merge patch and the two- and three-way patch makers raise only gitkrm errors and never
change their inputs; properties that hold for any document are checked where they hold.

tests/patch/test_patch_properties.py checks the three-way and round-trip properties on
documents that follow random schemas; here the documents need not follow anything."""

from __future__ import annotations

from typing import Any, Final

from hypothesis import example, given
from hypothesis import strategies as st

from gitkrm.errors import BadRequest, Conflict, GitkrmError, Invalid
from gitkrm.patch import (
    PatchMeta,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    create_merge_patch,
    create_three_way_json_merge_patch,
    create_three_way_merge_patch,
    create_two_way_merge_patch,
)
from gitkrm.patch.values import go_equal
from tests.fuzz.fuzz_values import FLOATS, call_unchanged, json_values, only_gitkrm_errors
from tests.patch.test_patch_properties import struct_schemas

# ---- documents: keys the random schemas know, directives, and anything else ----

_DIRECTIVE_KEYS: Final = [
    *("$patch", "$retainKeys", "$setElementOrder/a", "$setElementOrder/b", "$setElementOrder/"),
    *("$deleteFromPrimitiveList/a", "$deleteFromPrimitiveList/c", "$deleteFromPrimitiveList"),
    "$x",
]
KEYS: Final = st.one_of(
    st.sampled_from([*"abcdefgk", "p", "q", *_DIRECTIVE_KEYS]), st.text(max_size=3)
)
SCALARS: Final = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(-(2**70), 2**70),
    FLOATS,
    st.sampled_from(["x", "y", "k1", "k2", "replace", "merge", "delete", "retainKeys", ""]),
    st.text(max_size=4),
)
VALUES: Final = json_values(KEYS, SCALARS, max_leaves=24)
DOCS: Final = st.dictionaries(KEYS, VALUES, max_size=5)
METAS: Final = st.one_of(
    st.just(PatchMeta.from_schema({})), struct_schemas().map(PatchMeta.from_schema)
)
PATCH_ERRORS: Final = (BadRequest, Invalid, Conflict)


def _gitkrm_only(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """`fn`'s result, or None when it raised one of the patch engine's gitkrm errors."""
    got = only_gitkrm_errors(call_unchanged, fn, *args, **kwargs)
    if isinstance(got, GitkrmError):
        assert isinstance(got, PATCH_ERRORS), f"unexpected {type(got).__name__}: {got}"
        return None
    return got


# ---- strategic merge patch ----


@given(DOCS, DOCS, METAS)
@example({"a": [[1]]}, {"a": [[2]]}, PatchMeta.from_schema({}))
@example({}, {"$setElementOrder/a": [{"$patch": "delete"}]}, PatchMeta.from_schema({}))
def test_apply_strategic_merge_patch(doc: dict[str, Any], patch: dict[str, Any], meta: Any) -> None:
    out = _gitkrm_only(apply_strategic_merge_patch, doc, patch, meta)
    assert out is None or isinstance(out, dict)


@given(DOCS, DOCS, METAS, st.booleans())
def test_create_two_way_merge_patch(
    a: dict[str, Any], b: dict[str, Any], meta: Any, semantic: bool
) -> None:
    patch = _gitkrm_only(create_two_way_merge_patch, a, b, meta, semantic=semantic)
    if patch is not None:
        assert isinstance(patch, dict)
        _gitkrm_only(apply_strategic_merge_patch, a, patch, meta)


@given(DOCS, DOCS, DOCS, METAS, st.booleans(), st.booleans())
def test_create_three_way_merge_patch(
    o: dict[str, Any],
    m: dict[str, Any],
    c: dict[str, Any],
    meta: Any,
    overwrite: bool,
    semantic: bool,
) -> None:
    patch = _gitkrm_only(create_three_way_merge_patch, o, m, c, meta, overwrite, semantic=semantic)
    if patch is not None:
        assert isinstance(patch, dict)
        _gitkrm_only(apply_strategic_merge_patch, c, patch, meta)


# Without a schema and without directives a strategic patch is a JSON merge patch: maps
# merge and lists are replaced whole, so the two-way patch must round-trip (maps holding
# null cannot: null means "delete").
PLAIN_KEYS: Final = st.text(st.characters(blacklist_characters="$"), max_size=3)
PLAIN_SCALARS: Final = st.one_of(
    st.booleans(), st.integers(-(2**70), 2**70), FLOATS, st.text(max_size=3)
)
PLAIN_DOCS: Final = st.dictionaries(
    PLAIN_KEYS,
    st.recursive(
        PLAIN_SCALARS,
        lambda inner: st.one_of(
            st.lists(
                st.one_of(PLAIN_SCALARS, st.none(), st.dictionaries(PLAIN_KEYS, inner))
            ).filter(lambda xs: not any(isinstance(x, list) for x in xs)),
            st.dictionaries(PLAIN_KEYS, inner, max_size=4),
        ),
        max_leaves=16,
    ),
    max_size=5,
)


@given(PLAIN_DOCS, PLAIN_DOCS)
def test_two_way_patch_without_schema_round_trips(a: dict[str, Any], b: dict[str, Any]) -> None:
    meta = PatchMeta.from_schema({})
    patch = call_unchanged(create_two_way_merge_patch, a, b, meta, semantic=False)
    assert go_equal(call_unchanged(apply_strategic_merge_patch, a, patch, meta), b)


# ---- JSON merge patch (RFC 7386) ----


@given(VALUES, VALUES)
def test_apply_merge_patch_is_total_and_idempotent(doc: Any, patch: Any) -> None:
    once = call_unchanged(apply_merge_patch, doc, patch)
    assert go_equal(call_unchanged(apply_merge_patch, once, patch), once)


def _no_null_members(value: Any) -> bool:
    if isinstance(value, dict):
        return all(v is not None and _no_null_members(v) for v in value.values())
    return True


@given(VALUES, VALUES.filter(_no_null_members))
@example({"a": 1}, {"a": 1.0})
@example({"a": True}, {"a": 1})
@example([1], {"a": [None]})
def test_merge_patch_round_trips(a: Any, b: Any) -> None:
    patch = call_unchanged(create_merge_patch, a, b)
    assert go_equal(call_unchanged(apply_merge_patch, a, patch), b)


@given(st.one_of(st.none(), DOCS), st.one_of(st.none(), DOCS), st.one_of(st.none(), DOCS))
def test_three_way_json_merge_patch(o: Any, m: Any, c: Any) -> None:
    patch = _gitkrm_only(create_three_way_json_merge_patch, o, m, c)
    if patch is not None:
        assert isinstance(patch, dict)
        apply_merge_patch(c, patch)


# ---- JSON patch (RFC 6902) ----


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _pointers(doc: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every (pointer, value) of a document, the root included."""
    out = [(prefix, doc)]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_pointers(v, f"{prefix}/{_escape(k)}"))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_pointers(v, f"{prefix}/{i}"))
    return out


@st.composite
def json_patches(draw: st.DrawFn) -> tuple[Any, Any]:
    doc = draw(VALUES)
    known = [p for p, _ in _pointers(doc)]
    pointer = st.one_of(
        st.sampled_from(known),
        st.sampled_from(known).map(lambda p: p + "/-"),
        st.sampled_from(known).map(lambda p: p + "/0"),
        st.sampled_from(known).flatmap(lambda p: KEYS.map(lambda k: f"{p}/{_escape(k)}")),
        st.sampled_from(["", "/", "//", "~", "/~2", "/~", "a", "/01", "/-1", "/9999999999"]),
        st.text(max_size=6),
    )
    op = st.fixed_dictionaries(
        {
            "op": st.one_of(
                st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]), VALUES
            )
        },
        optional={"path": st.one_of(pointer, VALUES), "from": pointer, "value": VALUES},
    )
    ops = draw(st.one_of(st.lists(op, max_size=5), VALUES, st.lists(VALUES, max_size=3)))
    return doc, ops


@st.composite
def copy_chains(draw: st.DrawFn) -> tuple[Any, Any]:
    """Copies of a value into itself: each doubles it (fresh keys) or nests it one level
    deeper (the same key)."""
    ops = [
        {"op": "copy", "from": "/a", "path": f"/a/{draw(st.sampled_from(['c', str(i)]))}"}
        for i in range(draw(st.integers(0, 300)))
    ]
    return {"a": draw(VALUES)}, ops


@given(st.one_of(json_patches(), copy_chains()))
@example(({"a": {"b": 1}}, [{"op": "copy", "from": "/a", "path": f"/a/c{i}"} for i in range(40)]))
@example(({"a": {"b": 1}}, [{"op": "copy", "from": "/a", "path": "/a/c"}] * 1200))
@example(({"a": 1}, [{"op": "move", "from": "/a", "path": "/a/b"}]))
@example(({"a": [1]}, [{"op": "add", "path": "/a/01", "value": 2}]))
@example(
    ([], [{"op": "add", "path": "/-", "value": 1}, {"op": "test", "path": "/0", "value": 1.0}])
)
def test_apply_json_patch(case: tuple[Any, Any]) -> None:
    doc, ops = case
    _gitkrm_only(apply_json_patch, doc, ops)


@st.composite
def insertions(draw: st.DrawFn) -> tuple[Any, str, Any, bool]:
    """A document, a pointer to a new member or list slot in one of its containers, a value,
    and whether the container is a map."""
    doc = draw(st.one_of(st.dictionaries(KEYS, VALUES, max_size=4), st.lists(VALUES, max_size=4)))
    containers = [(p, v) for p, v in _pointers(doc) if isinstance(v, dict | list)]
    where, container = draw(st.sampled_from(containers))
    if isinstance(container, dict):
        key = draw(KEYS.filter(lambda k: k not in container))
        return doc, f"{where}/{_escape(key)}", draw(VALUES), True
    return doc, f"{where}/{draw(st.integers(0, len(container)))}", draw(VALUES), False


@given(insertions())
def test_json_patch_add_then_test_then_remove_is_the_identity(
    case: tuple[Any, str, Any, bool],
) -> None:
    doc, pointer, value, in_map = case
    added = call_unchanged(
        apply_json_patch,
        doc,
        [
            {"op": "add", "path": pointer, "value": value},
            {"op": "test", "path": pointer, "value": value},
        ],
    )
    back = call_unchanged(apply_json_patch, added, [{"op": "remove", "path": pointer}])
    assert go_equal(back, doc)
    copied = call_unchanged(
        apply_json_patch, added, [{"op": "copy", "from": pointer, "path": pointer}]
    )
    if in_map:  # onto itself: the same member again (in a list, copy inserts)
        assert go_equal(copied, added)
