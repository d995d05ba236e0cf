"""Strategic merge patch, apply side: apimachinery's `mergeMap` without mutation.

The same routine serves two callers, as in Go: applying a patch to an object
(`APPLY`: parallel lists are executed, unmatched nulls dropped) and combining the two
halves of a three-way patch (`COMBINE`: directives are carried over, nulls kept).

Inputs are never mutated: every map this module changes is a fresh shallow copy, and
unchanged subtrees of the document and the patch are shared with the result.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final

from gitkrm.krm.types import JSONObject, JSONValue
from gitkrm.patch.aliasing import live_order_view
from gitkrm.patch.directives import (
    DELETE_PREFIX,
    MERGE,
    ORDER_PREFIX,
    REPLACE,
    RETAIN_KEYS,
    MergeOptions,
    extract_key,
    materialize,
)
from gitkrm.patch.failures import (
    BAD_PRIMITIVE_LIST,
    BAD_RETAIN_KEYS,
    BAD_SET_ORDER,
    PatchFailure,
    bad_arg_type,
)
from gitkrm.patch.meta import FieldMeta, MergeKey, PatchMeta
from gitkrm.patch.order import (
    DELETE,
    DIRECTIVE,
    element_kind,
    no_merge_key,
    normalize_element_order,
    partition,
)
from gitkrm.patch.values import MAP, dedupe_scalars, go_equal, gofmt, hkey, kind

_MISSING: Final = object()


def merge_map(
    original: JSONObject | None,
    patch: JSONObject,
    meta: PatchMeta,
    opts: MergeOptions,
) -> JSONObject:
    """Merge `patch` into `original` (a new map; neither input is changed)."""
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == REPLACE:
            return {k: v for k, v in patch.items() if k != DIRECTIVE}
        if directive == DELETE:
            return {}
        if directive != MERGE:
            raise PatchFailure(f"unknown patch type: {gofmt(directive)} in map: {gofmt(patch)}")
        # `$patch: merge` states the default; apimachinery rejects it, gitkrm accepts it.
        patch = {k: v for k, v in patch.items() if k != DIRECTIVE}
    out = dict(original) if original else {}
    consumed: set[str] = set()
    if RETAIN_KEYS in patch:
        _retain_keys(out, patch, opts)
    if any(k[:1] == "$" for k in patch):
        for key in [k for k in patch if k.startswith(ORDER_PREFIX)]:
            try:
                _set_element_order(out, patch, key, meta, opts, consumed)
            except PatchFailure as e:
                raise e.at(key) from None
    for k, pv in patch.items():
        is_delete_list = False
        if k[:1] == "$":
            if k == RETAIN_KEYS or k.startswith(ORDER_PREFIX):
                continue
            if k.startswith(DELETE_PREFIX):
                if not opts.parallel:
                    out[k] = pv
                    continue
                try:
                    k = extract_key(k, DELETE_PREFIX)
                except PatchFailure as e:
                    raise e.at(k) from None
                is_delete_list = True
        elif k in consumed:
            continue
        try:
            _merge_field(out, k, pv, meta, opts, is_delete_list)
        except PatchFailure as e:
            raise e.at(k) from None
    return out


def _merge_field(
    out: JSONObject,
    k: str,
    pv: JSONValue,
    meta: PatchMeta,
    opts: MergeOptions,
    is_delete_list: bool,
) -> None:
    if pv is None:
        out.pop(k, None)
        if opts.drop_nulls:
            return
    cur = out.get(k, _MISSING)
    # A value of the same JSON kind merges (maps, lists) or replaces (scalars); any other
    # value, or none, is replaced by the patch value as data.
    if isinstance(pv, dict):
        if isinstance(cur, dict):
            fm = meta.field(k)
            out[k] = pv if fm.strategy == REPLACE else merge_map(cur, pv, fm.sub, opts)
            return
    elif isinstance(pv, list):
        if isinstance(cur, list):
            out[k] = merge_list_field(cur, pv, meta.field(k), opts, is_delete_list=is_delete_list)
            return
    elif cur is not _MISSING and kind(cur) == kind(pv):
        out[k] = pv
        return
    if not is_delete_list:
        value, keep = materialize(pv, drop_nulls=opts.drop_nulls)
        if keep:
            out[k] = value
        else:
            out.pop(k, None)


def _retain_keys(out: JSONObject, patch: JSONObject, opts: MergeOptions) -> None:
    wanted = patch[RETAIN_KEYS]
    if not opts.parallel:
        if RETAIN_KEYS in out:
            if not go_equal(out[RETAIN_KEYS], wanted):
                raise PatchFailure(
                    f"{gofmt(out[RETAIN_KEYS])} and {gofmt(wanted)} are not deep equal: "
                    "this may happen when calculating the 3-way diff patch"
                )
        else:
            out[RETAIN_KEYS] = wanted
        return
    if not isinstance(wanted, list):
        raise PatchFailure(BAD_RETAIN_KEYS)
    allowed = {v for v in wanted if isinstance(v, str)}
    for k, v in patch.items():
        if k == RETAIN_KEYS or v is None:
            continue
        if k.startswith(DELETE_PREFIX) or k.startswith(ORDER_PREFIX):
            continue
        if k not in allowed:
            raise PatchFailure(BAD_RETAIN_KEYS)
    for k in [k for k in out if k not in allowed]:
        del out[k]


def _set_element_order(
    out: JSONObject,
    patch: JSONObject,
    key: str,
    meta: PatchMeta,
    opts: MergeOptions,
    consumed: set[str],
) -> None:
    """apimachinery `mergePatchIntoOriginal` for one `$setElementOrder/<field>`."""
    order = patch[key]
    if not opts.parallel:
        if key in out:
            if not go_equal(out[key], order):
                raise PatchFailure(BAD_SET_ORDER)
        else:
            out[key] = order
    if not isinstance(order, list):
        raise bad_arg_type("[]interface {}", order)
    field = extract_key(key, ORDER_PREFIX)
    has_orig, has_new = field in out, field in patch
    orig = out[field] if has_orig else []
    new = patch[field] if has_new else []
    if not isinstance(orig, list):
        raise bad_arg_type("[]interface {}", orig)
    if not isinstance(new, list):
        raise bad_arg_type("[]interface {}", new)
    fm = meta.field(field)
    mk = fm.merge_key
    validate_set_order(new, order, mk)
    if has_orig and has_new:
        merged = merge_list_field(orig, new, fm, opts, is_delete_list=False)
    elif has_orig:
        merged = orig
    elif has_new:
        merged, _ = materialize(new, drop_nulls=opts.drop_nulls)
    else:
        return
    k = element_kind(orig, new)
    if k == MAP and mk is not None and len(merged) == len(order):
        fast = _reorder_all(merged, order, mk)
        if fast is not None:
            out[field] = fast
            consumed.add(field)
            return
    inside, outside = partition(merged, order, mk)
    live = orig
    if k == MAP and mk is not None and has_new and fm.strategy == MERGE:
        live = live_order_view(orig, new, mk)
    out[field] = normalize_element_order(inside, outside, order, live, mk, k)
    consumed.add(field)


def _reorder_all(
    merged: list[JSONValue], order: list[JSONValue], mk: MergeKey
) -> list[JSONValue] | None:
    """The result when `$setElementOrder` names exactly the merged items (no server-only
    items): the items in that order. None when that is not the case."""
    where: dict[Hashable, int] = {}
    for i, o in enumerate(order):
        if not isinstance(o, dict) or not mk.present(o):
            return None
        where.setdefault(mk.value(o), i)
    pos = []
    for item in merged:
        if not isinstance(item, dict) or not mk.present(item) or item.get(DIRECTIVE) == DELETE:
            return None
        at = where.get(mk.value(item))
        if at is None:
            return None
        pos.append(at)
    if len(set(pos)) != len(pos):
        return None
    return [merged[i] for i in sorted(range(len(merged)), key=pos.__getitem__)]


def validate_set_order(
    patch_list: list[JSONValue], order: list[JSONValue], mk: MergeKey | None
) -> None:
    """The items of the patch list must appear in `$setElementOrder` in the same order."""
    if not order or not patch_list:
        return
    items = patch_list
    if mk is not None:
        for v in patch_list:
            if not isinstance(v, dict):
                raise bad_arg_type("map[string]interface {}", v)
        items = [v for v in patch_list if isinstance(v, dict) and v.get(DIRECTIVE) != DELETE]
    pi = oi = 0
    while pi < len(items) and oi < len(order):
        item = items[pi]
        if isinstance(item, dict) and DIRECTIVE in item:
            pi += 1
            continue
        if _key_equal(item, order[oi], mk):
            pi += 1
        oi += 1
    if pi < len(items) and oi >= len(order):
        raise PatchFailure(
            f"the order in patch list:\n{gofmt(patch_list)}\n doesn't match "
            f"{ORDER_PREFIX} list:\n{gofmt(order)}"
        )


def _key_equal(left: JSONValue, right: JSONValue, mk: MergeKey | None) -> bool:
    """apimachinery `mergeKeyValueEqual`."""
    if mk is None:
        return go_equal(left, right) and not isinstance(left, dict | list)
    if not isinstance(left, dict):
        raise bad_arg_type("map[string]interface {}", left)
    if not mk.present(left):
        raise no_merge_key(left, mk)
    if not isinstance(right, dict):
        raise bad_arg_type("map[string]interface {}", right)
    if not mk.present(right):
        raise no_merge_key(right, mk)
    return bool(mk.value(left) == mk.value(right))


def merge_list_field(
    original: list[JSONValue],
    patch: list[JSONValue],
    fm: FieldMeta,
    opts: MergeOptions,
    *,
    is_delete_list: bool,
) -> list[JSONValue]:
    """apimachinery `mergeSliceHandler`: merge lists merge, other lists are replaced."""
    if fm.strategy == MERGE or is_delete_list:
        return merge_list(original, patch, fm, opts, is_delete_list=is_delete_list)
    return patch


def merge_list(
    original: list[JSONValue],
    patch: list[JSONValue],
    fm: FieldMeta,
    opts: MergeOptions,
    *,
    is_delete_list: bool,
) -> list[JSONValue]:
    if not original and not patch:
        return original
    k = element_kind(original, patch)
    mk = fm.merge_key
    if k != MAP:
        if opts.parallel and is_delete_list:
            return _delete_scalars(original, patch)
        merged = dedupe_scalars(original + patch)
    else:
        if mk is None:
            raise PatchFailure("cannot merge lists without merge key")
        original, patch = _special_elements(original, patch, mk)
        merged = _merge_elements(original, patch, mk, fm.sub, opts)
    inside, outside = partition(merged, patch, mk)
    return normalize_element_order(inside, outside, patch, original, mk, k)


def _special_elements(
    original: list[JSONValue], patch: list[JSONValue], mk: MergeKey
) -> tuple[list[JSONValue], list[JSONValue]]:
    """Execute `$patch: delete` items, honour `$patch: replace`; return what remains."""
    plain: list[JSONValue] = []
    replace = False
    for v in patch:
        # element_kind found maps only: the isinstance check only tells the type checker.
        if not isinstance(v, dict) or DIRECTIVE not in v:
            plain.append(v)
            continue
        directive = v[DIRECTIVE]
        if directive == DELETE:
            if not mk.present(v):
                raise no_merge_key(v, mk)
            gone = mk.value(v)
            original = [o for o in original if not _matches(o, mk, gone)]
        elif directive == REPLACE:
            replace = True
        elif directive == MERGE:
            raise PatchFailure("merging lists cannot yet be specified in the patch")
        else:
            raise PatchFailure(f"unknown patch type: {gofmt(directive)} in map: {gofmt(v)}")
    if replace:
        return plain, []
    return original, plain


def _matches(item: JSONValue, mk: MergeKey, wanted: Hashable) -> bool:
    if not isinstance(item, dict):
        raise PatchFailure(f"value for key {gofmt(item)} is not a map")
    return mk.present(item) and mk.value(item) == wanted


def _merge_elements(
    original: list[JSONValue],
    patch: list[JSONValue],
    mk: MergeKey,
    sub: PatchMeta,
    opts: MergeOptions,
) -> list[JSONValue]:
    out = list(original)
    where: dict[Hashable, int] = {}
    for i, item in enumerate(out):
        if not isinstance(item, dict):
            raise PatchFailure(f"value for key {i} is not a map")
        if mk.present(item):
            where.setdefault(mk.value(item), i)
    for v in patch:
        assert isinstance(v, dict)  # element_kind found maps only
        if not mk.present(v):
            raise no_merge_key(v, mk)
        key = mk.value(v)
        at = where.get(key)
        if at is None:
            where[key] = len(out)
            if opts.drop_nulls:
                # A new item has nothing to merge with: like a new field, it is data
                # (apimachinery appends it raw, nulls and directives included, and
                # leaves the typed decode to drop them).
                v, _ = materialize(v, drop_nulls=True)
            out.append(v)
        else:
            cur = out[at]
            assert isinstance(cur, dict)  # every item of `out` is a map (checked above)
            try:
                out[at] = merge_map(cur, v, sub, opts)
            except PatchFailure as e:
                raise e.at(f"[{mk.primary}={gofmt(mk.raw(v))}]") from None
    return out


def _delete_scalars(current: list[JSONValue], to_delete: list[JSONValue]) -> list[JSONValue]:
    try:
        gone = {hkey(v) for v in to_delete}
        return [v for v in current if hkey(v) not in gone]
    except TypeError as e:
        raise PatchFailure(BAD_PRIMITIVE_LIST) from e
