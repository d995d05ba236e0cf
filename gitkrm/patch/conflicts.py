"""Do two strategic patches change the same field differently? (apimachinery's
`MergingMapsHaveConflicts`, reporting *which* field instead of a yes/no.)

A three-way patch with `overwrite=False` is compared with the changes someone else made
on the live object since the last apply; the first field both touch with different
values is the conflict. Parallel-list directives (`$setElementOrder`,
`$deleteFromPrimitiveList`) never conflict: reordering and removing set members commute.
"""

from __future__ import annotations

from collections.abc import Hashable

from gitkrm.krm.types import JSONObject, JSONValue
from gitkrm.patch.directives import (
    DELETE_PREFIX,
    DIRECTIVE,
    MERGE,
    ORDER_PREFIX,
    REPLACE,
    RETAIN_KEYS,
)
from gitkrm.patch.failures import PatchFailure
from gitkrm.patch.meta import FieldMeta, MergeKey, PatchMeta
from gitkrm.patch.order import element_kind
from gitkrm.patch.semantic import values_equal
from gitkrm.patch.values import MAP, dedupe_scalars, go_equal, go_sort_scalars, gofmt


def find_conflict(
    left: JSONObject, right: JSONObject, meta: PatchMeta, *, semantic: bool
) -> str | None:
    """The dotted path of the first field `left` and `right` set differently, or None."""
    return _maps(left, right, meta, "", semantic)


def _value(
    left: JSONValue,
    right: JSONValue,
    fm: FieldMeta | None,
    sub: PatchMeta,
    strategy: str,
    path: str,
    semantic: bool,
) -> str | None:
    if isinstance(left, dict):
        if not isinstance(right, dict):
            return path
        lm, rm = DIRECTIVE in left, DIRECTIVE in right
        if (lm or rm) and (lm != rm or not go_equal(left[DIRECTIVE], right[DIRECTIVE])):
            return path
        if strategy == REPLACE:
            return None
        return _maps(left, right, sub, path, semantic)
    if isinstance(left, list):
        if not isinstance(right, list):
            return path
        return _lists(left, right, fm, sub, strategy, path, semantic)
    if go_equal(left, right):
        return None
    if semantic and fm is not None and values_equal(left, right, fm):
        return None
    return path


def _maps(
    left: JSONObject, right: JSONObject, meta: PatchMeta, path: str, semantic: bool
) -> str | None:
    for key in sorted(left):
        if key in (DIRECTIVE, RETAIN_KEYS) or key not in right:
            continue
        if key.startswith(ORDER_PREFIX) or key.startswith(DELETE_PREFIX):
            continue
        lv = left[key]
        fm = meta.field(key)
        strategy = fm.strategy if isinstance(lv, dict | list) else ""
        where = f"{path}.{key}" if path else key
        hit = _value(lv, right[key], fm, fm.sub, strategy, where, semantic)
        if hit is not None:
            return hit
    return None


def _lists(
    left: list[JSONValue],
    right: list[JSONValue],
    fm: FieldMeta | None,
    sub: PatchMeta,
    strategy: str,
    path: str,
    semantic: bool,
) -> str | None:
    if not left and not right:
        return None
    k = element_kind(left, right)
    if strategy == MERGE and fm is not None:
        if k != MAP:
            return None
        mk = fm.merge_key
        lmap = _by_key(left, mk)
        rmap = _by_key(right, mk)
        for key, lv in lmap.items():
            if key in rmap:
                assert mk is not None
                where = f"{path}[{mk.primary}={gofmt(mk.raw(lv))}]"
                hit = _value(lv, rmap[key], None, sub, "", where, semantic)
                if hit is not None:
                    return hit
        return None
    if len(left) != len(right):
        return path
    if k != MAP:
        left = go_sort_scalars(dedupe_scalars(left))
        right = go_sort_scalars(dedupe_scalars(right))
        if len(left) != len(right):
            return path
    for i, (lx, rx) in enumerate(zip(left, right, strict=True)):
        hit = _value(lx, rx, fm, sub, "", f"{path}[{i}]", semantic)
        if hit is not None:
            return hit
    return None


def _by_key(items: list[JSONValue], mk: MergeKey | None) -> dict[Hashable, JSONObject]:
    out: dict[Hashable, JSONObject] = {}
    for item in items:
        if not isinstance(item, dict):
            raise PatchFailure(f"invalid element type in merging list:{gofmt(items)}")
        if mk is None or not mk.present(item):
            raise PatchFailure(
                f"cannot find merge key `{mk}` in merging list element:{gofmt(item)}"
            )
        out[mk.value(item)] = item
    return out
