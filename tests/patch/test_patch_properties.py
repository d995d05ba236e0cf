"""Property tests over random schemas and random documents that follow them.

For any last-applied `original`, desired `modified` and live `current`, applying
`create_three_way_merge_patch(original, modified, current)` to `current` gives a
document that
- contains everything in `modified`;
- keeps every field of `current` that neither `original` nor `modified` has, except
  inside atomic lists and under `replace` or `retainKeys` parents (Kubernetes replaces
  or clears those);
- has nothing that `original` had and `modified` dropped.
Also: two-way patches round-trip, JSON merge patches round-trip, identical inputs give
empty patches, and no function changes its inputs.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitkrm.patch import (
    PatchMeta,
    apply_merge_patch,
    apply_strategic_merge_patch,
    create_merge_patch,
    create_three_way_json_merge_patch,
    create_three_way_merge_patch,
    create_two_way_merge_patch,
)
from gitkrm.patch.meta import FieldMeta
from gitkrm.patch.semantic import empty_like, values_equal
from gitkrm.patch.values import go_equal, hkey

SETTINGS: Final = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
NAMES: Final = list("abcdefg")
MISSING: Final[Any] = object()

SCALARS: Final = {
    "integer": st.integers(0, 3),
    "string": st.sampled_from(["x", "y", "z"]),
    "boolean": st.booleans(),
}

# ---------------------------------------------------------------- random schemas


@st.composite
def struct_schemas(draw: st.DrawFn, depth: int = 0, *, element: bool = False) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    props: dict[str, Any] = {"k": {"type": "string"}} if element else {}
    kinds = ["scalar", "map", "atomic", "set"]
    if depth < 2:
        kinds += ["struct", "replace", "retain", "merge", "merge_retain", "atomic_structs"]
    for name in names:
        kind = draw(st.sampled_from(kinds))
        scalar = {"type": draw(st.sampled_from(sorted(SCALARS)))}
        if kind == "scalar":
            props[name] = scalar
        elif kind == "map":
            props[name] = {"type": "object", "additionalProperties": scalar}
        elif kind == "atomic":
            props[name] = {"type": "array", "items": scalar}
        elif kind == "set":
            props[name] = {"type": "array", "items": scalar, "x-kubernetes-patch-strategy": "merge"}
        elif kind == "atomic_structs":
            props[name] = {"type": "array", "items": draw(struct_schemas(depth + 1))}
        elif kind in ("struct", "replace", "retain"):
            sub = draw(struct_schemas(depth + 1))
            strategy = {"replace": "replace", "retain": "retainKeys"}.get(kind)
            if strategy:
                sub = {**sub, "x-kubernetes-patch-strategy": strategy}
            props[name] = sub
        else:
            props[name] = {
                "type": "array",
                "items": draw(struct_schemas(depth + 1, element=True)),
                "x-kubernetes-patch-strategy": "merge,retainKeys"
                if kind == "merge_retain"
                else "merge",
                "x-kubernetes-patch-merge-key": "k",
            }
    return {"type": "object", "properties": props}


def values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    t = schema.get("type")
    if t in SCALARS:
        return SCALARS[t]
    if "additionalProperties" in schema:
        return st.dictionaries(
            st.sampled_from("pqr"), values(schema["additionalProperties"]), max_size=3
        )
    if t == "array":
        items = schema["items"]
        if "properties" in items:
            if schema.get("x-kubernetes-patch-merge-key"):
                return st.lists(docs(items), max_size=3, unique_by=lambda e: e["k"])
            return st.lists(docs(items), max_size=2)
        if schema.get("x-kubernetes-patch-strategy") == "merge":
            return st.lists(values(items), max_size=3, unique_by=hkey)
        return st.lists(values(items), max_size=3)
    return docs(schema)


def docs(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    props = schema["properties"]
    required = {"k": st.sampled_from(["k1", "k2", "k3", "k4"])} if "k" in props else {}
    optional = {name: values(p) for name, p in props.items() if name != "k"}
    return st.fixed_dictionaries(required, optional=optional)


Triple = tuple[PatchMeta, dict[str, Any], dict[str, Any], dict[str, Any]]
"""A patch meta and an original, a modified and a current document of it."""


@st.composite
def triples(draw: st.DrawFn) -> Triple:
    schema = draw(struct_schemas())
    strategy = docs(schema)
    return PatchMeta.from_schema(schema), draw(strategy), draw(strategy), draw(strategy)


# ---------------------------------------------------------------- the three-way check


def _absent(value: Any, fm: FieldMeta, semantic: bool) -> bool:
    return value is MISSING or (semantic and empty_like(value, fm))


def check_map(
    o: Any, m: Any, c: Any, r: Any, meta: PatchMeta, *, retain: bool, semantic: bool
) -> None:
    o = o if isinstance(o, dict) else {}
    c = c if isinstance(c, dict) else {}
    assert isinstance(r, dict)
    for key in set(o) | set(m) | set(c) | set(r):
        fm = meta.field(key)
        ov, mv, cv, rv = (d.get(key, MISSING) for d in (o, m, c, r))
        if mv is not MISSING:
            if rv is MISSING:
                assert semantic, f"{key}: missing from the result"
                assert empty_like(mv, fm), f"{key}: missing from the result"
                continue
            check_value(ov, mv, cv, rv, fm, semantic=semantic)
        elif not _absent(ov, fm, semantic):
            assert rv is MISSING, f"{key}: original had it, modified dropped it"
        elif cv is not MISSING and not retain:
            assert go_equal(rv, cv), f"{key}: the live-only value was not kept"


def check_value(o: Any, m: Any, c: Any, r: Any, fm: FieldMeta, *, semantic: bool) -> None:
    if isinstance(m, dict) and fm.strategy != "replace":
        check_map(o, m, c, r, fm.sub, retain=fm.retain_keys, semantic=semantic)
    elif isinstance(m, list) and fm.strategy == "merge" and fm.merge_key is not None:
        check_merge_list(o, m, c, r, fm, semantic=semantic)
    elif isinstance(m, list) and fm.strategy == "merge":
        check_set(o, m, c, r)
    elif semantic:
        assert values_equal(r, m, fm), f"{r!r} != {m!r}"
    else:
        assert go_equal(r, m), f"{r!r} != {m!r}"


def check_merge_list(o: Any, m: Any, c: Any, r: Any, fm: FieldMeta, *, semantic: bool) -> None:
    def by_key(items: Any) -> dict[Any, Any]:
        return {e["k"]: e for e in items} if isinstance(items, list) else {}

    om, mm, cm, rm = by_key(o), by_key(m), by_key(c), by_key(r)
    assert isinstance(r, list)
    assert len(rm) == len(r), "merge keys repeat in the result"
    for k in set(om) | set(mm) | set(cm):
        if k in mm:
            assert k in rm, f"element {k} missing"
            check_map(
                om.get(k), mm[k], cm.get(k), rm[k], fm.sub, retain=fm.retain_keys, semantic=semantic
            )
        elif k in om:
            assert k not in rm, f"element {k} should have been deleted"
        else:
            assert go_equal(rm.get(k), cm[k]), f"live-only element {k} not kept"
    order = [e["k"] for e in r if e["k"] in mm]
    assert order == [e["k"] for e in m], "desired elements out of order"


def check_set(o: Any, m: list[Any], c: Any, r: Any) -> None:
    ok = {hkey(v) for v in o} if isinstance(o, list) else set()
    mk = {hkey(v) for v in m}
    rk = {hkey(v) for v in r}
    assert mk <= rk
    assert not (ok - mk) & rk
    for v in c if isinstance(c, list) else []:
        if hkey(v) not in ok | mk:
            assert hkey(v) in rk


@SETTINGS
@given(triples(), st.booleans())
def test_three_way_result_contains_modified_keeps_others_drops_deleted(
    t: Triple, semantic: bool
) -> None:
    meta, original, modified, current = t
    snapshot = copy.deepcopy((original, modified, current))
    patch = create_three_way_merge_patch(original, modified, current, meta, semantic=semantic)
    result = apply_strategic_merge_patch(current, patch, meta)
    assert (original, modified, current) == snapshot, "inputs were changed"
    check_map(original, modified, current, result, meta, retain=False, semantic=semantic)


@SETTINGS
@given(triples())
def test_two_way_patch_round_trips(t: Triple) -> None:
    meta, a, b, _ = t
    patch = create_two_way_merge_patch(a, b, meta, semantic=False)
    assert go_equal(apply_strategic_merge_patch(a, patch, meta), b)


@SETTINGS
@given(triples())
def test_identical_inputs_give_empty_patches(t: Triple) -> None:
    meta, a, _, _ = t
    b = copy.deepcopy(a)
    assert create_two_way_merge_patch(a, b, meta) == {}
    assert create_three_way_merge_patch(a, b, a, meta) == {}
    assert create_three_way_merge_patch(b, a, copy.deepcopy(a), meta) == {}
    assert create_merge_patch(a, b) == {}
    assert create_three_way_json_merge_patch(a, b, a) == {}
    # Go itself re-sends `replace`-strategy maps unchanged; its patch must be a no-op.
    exact = create_three_way_merge_patch(a, b, a, meta, semantic=False)
    assert go_equal(apply_strategic_merge_patch(a, exact, meta), a)


json_scalars = st.booleans() | st.integers(-5, 5) | st.text("ab", max_size=2)
json_docs = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text("abc", min_size=1, max_size=2), inner, max_size=3)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text("abc", min_size=1, max_size=2), json_docs, max_size=4)


@SETTINGS
@given(json_objects, json_objects)
def test_json_merge_patch_round_trips(a: dict[str, Any], b: dict[str, Any]) -> None:
    snapshot = copy.deepcopy((a, b))
    patch = create_merge_patch(a, b)
    assert go_equal(apply_merge_patch(a, patch), b)
    assert (a, b) == snapshot


@SETTINGS
@given(json_objects, json_objects, json_objects)
def test_json_merge_three_way(o: dict[str, Any], m: dict[str, Any], c: dict[str, Any]) -> None:
    result = apply_merge_patch(c, create_three_way_json_merge_patch(o, m, c))
    for k, v in m.items():
        if not isinstance(v, dict):
            assert go_equal(result[k], v)
    for k in set(o) - set(m):
        assert k not in result
    for k in set(c) - set(o) - set(m):
        assert go_equal(result[k], c[k])
