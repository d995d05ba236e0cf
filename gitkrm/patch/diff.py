"""Strategic merge patch, create side: apimachinery's `diffMaps` and `diffLists`.

`diff_maps(original, modified, ...)` returns the strategic patch that turns `original`
into `modified`, with the options apimachinery uses to build two- and three-way patches
(ignore additions/changes, ignore deletions, emit `$setElementOrder`). With
`semantic=True` values that mean the same (see `semantic`) are not changes, and a
`$setElementOrder` that would not move anything is left out (applying the patch gives
what Go's patch gives, up to semantic equality); with `semantic=False` the output is
byte-for-byte what Go computes. `$retainKeys` is kept as Go emits it: it clears fields
others set inside union-like structs (Deployment `strategy`, volume sources).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from gitkrm.krm.types import JSONObject, JSONValue
from gitkrm.patch.directives import (
    DELETE_PREFIX,
    DIRECTIVE,
    MERGE,
    ORDER_PREFIX,
    REPLACE,
    RETAIN_KEYS,
)
from gitkrm.patch.failures import PatchFailure, bad_arg_type
from gitkrm.patch.meta import FieldMeta, MergeKey, PatchMeta
from gitkrm.patch.order import (
    DELETE,
    element_kind,
    identity,
    no_merge_key,
    normalize_slice_order,
)
from gitkrm.patch.semantic import empty_like, values_equal
from gitkrm.patch.values import (
    LIST,
    MAP,
    dedupe_scalars,
    go_equal,
    go_sort_by,
    go_sort_scalars,
    gofmt,
)

_MISSING: Final = object()
_SCALAR_TYPES: Final = frozenset((str, int, float, bool, type(None)))


@dataclass(frozen=True, slots=True)
class DiffOptions:
    set_element_order: bool = False
    ignore_changes: bool = False
    """Leave additions and changes out (the deletions half of a three-way patch)."""
    ignore_deletions: bool = False
    """Leave deletions out (the live-to-desired half of a three-way patch)."""
    semantic: bool = False


def diff_maps(
    original: JSONObject,
    modified: JSONObject,
    meta: PatchMeta,
    o: DiffOptions,
    retain: bool = False,
) -> JSONObject:
    patch: JSONObject = {}
    ignore_changes = o.ignore_changes
    exact_changes = not ignore_changes and not o.semantic
    fields = meta._fields
    for key, mv in modified.items():
        ov = original.get(key, _MISSING)
        if ov is mv:
            if exact_changes and type(mv) is dict and meta.field(key).strategy == REPLACE:
                patch[key] = mv  # Go emits `replace` maps even when unchanged
            continue
        if ov is _MISSING:
            if not ignore_changes and not (o.semantic and empty_like(mv, meta.field(key))):
                patch[key] = mv
            continue
        t = type(ov)
        if t is type(mv):
            if t is dict:
                fm = fields.get(key) or meta.field(key)
                # Equal maps need no patch. Python's == is Go's except for true-vs-1,
                # which a deletions-only diff never reports and a map of strings cannot
                # hold; Go re-sends equal `replace` maps (exact mode).
                # `t is dict`: both are maps. (isinstance() would tell the type checker at a
                # cost in the hottest loop of the patch engine.)
                if ov == mv and (
                    ignore_changes or (_all_str(mv) and (o.semantic or fm.strategy != REPLACE))  # type: ignore[arg-type]
                ):
                    continue
                if fm.strategy != REPLACE:
                    try:
                        sub = diff_maps(ov, mv, fm.sub, o, fm.retain_keys)  # type: ignore[arg-type]
                    except PatchFailure as e:
                        raise e.at(key) from None
                    if sub:
                        patch[key] = sub
                    continue
            elif t is list:
                if ignore_changes and ov == mv:
                    continue
            elif t in _SCALAR_TYPES and ov == mv and key != DIRECTIVE:
                continue
        try:
            _diff_value(key, ov, mv, patch, meta, o)
        except PatchFailure as e:
            raise e.at(key) from None
    if not o.ignore_deletions:
        for key, ov in original.items():
            if key not in modified and not (o.semantic and empty_like(ov, meta.field(key))):
                patch[key] = None
    if retain:
        retain_list: list[JSONValue] = [k for k, v in modified.items() if v is not None]
        if retain_list and (patch or _has_extra(original, modified)):
            patch[RETAIN_KEYS] = go_sort_scalars(retain_list)
    return patch


def _diff_value(
    key: str, ov: object, mv: JSONValue, patch: JSONObject, meta: PatchMeta, o: DiffOptions
) -> None:
    if key == DIRECTIVE:
        if not isinstance(ov, str) or not isinstance(mv, str):
            raise PatchFailure(f"invalid value for special key: {DIRECTIVE}")
        if ov != mv:
            patch[key] = mv
        return
    if isinstance(ov, dict) and isinstance(mv, dict):
        fm = meta.field(key)
        if fm.strategy == REPLACE:
            if not o.ignore_changes and not (o.semantic and values_equal(ov, mv, fm)):
                patch[key] = mv
            return
        sub = diff_maps(ov, mv, fm.sub, o, fm.retain_keys)
        if sub:
            patch[key] = sub
        return
    if isinstance(ov, list) and isinstance(mv, list):
        fm = meta.field(key)
        if fm.strategy == MERGE:
            add, dels, order = diff_lists(ov, mv, fm, o)
            if add:
                patch[key] = add
            if dels:
                patch[f"{DELETE_PREFIX}/{key}"] = dels
            if order:
                patch[f"{ORDER_PREFIX}/{key}"] = order
            return
    if o.ignore_changes or go_equal(ov, mv):
        return
    if o.semantic and values_equal(ov, mv, meta.field(key)):
        return
    patch[key] = mv


def _all_str(m: JSONObject) -> bool:
    return all(type(v) is str for v in m.values())


def _has_extra(original: JSONObject, modified: JSONObject) -> bool:
    """apimachinery `hasAdditionalNewField`: original has a non-null key modified lacks."""
    return any(v is not None and k not in modified for k, v in original.items())


def diff_lists(
    original: list[JSONValue], modified: list[JSONValue], fm: FieldMeta, o: DiffOptions
) -> tuple[list[JSONValue] | None, list[JSONValue] | None, list[JSONValue] | None]:
    """(patch list, `$deleteFromPrimitiveList` list, `$setElementOrder` list) of a merge list."""
    if not original:
        if not modified or o.ignore_changes:
            return None, None, None
        return modified, None, None
    if all(type(v) is dict for v in original) and all(type(v) is dict for v in modified):
        k = MAP
    else:
        k = element_kind(original, modified)
    mk = fm.merge_key
    order: list[JSONValue] | None = None
    if k == MAP:
        # Every item of both lists is a map (checked just above). Said with an ignore, not
        # typing.cast: a call per list costs the no-op re-sync 1-2%.
        o_maps: list[JSONObject] = original  # type: ignore[assignment]
        m_maps: list[JSONObject] = modified  # type: ignore[assignment]
        if mk is None:
            raise no_merge_key(o_maps[0], "")
        fast = _diff_unique_maps(o_maps, m_maps, fm, mk, o)
        if fast is not None:
            patch_list, deletions, same = fast
        else:
            patch_list, deletions = _diff_lists_of_maps(o_maps, m_maps, fm, o)
            patch_list = normalize_slice_order(patch_list, modified, mk, k)
            same = _order_same(o_maps, m_maps, mk)
        patch_list += deletions
        if o.set_element_order and (
            (not o.ignore_changes and (patch_list or not same))
            or (not o.ignore_deletions and patch_list)
        ):
            if (
                o.semantic
                and o.ignore_deletions
                and not patch_list
                and _keeps_order(original, modified, mk, k)
            ):
                return patch_list, None, None
            order = [mk.stub(v) for v in m_maps]
        return patch_list, None, order
    if k == LIST:  # pragma: no cover - element_kind rejects lists of lists
        raise PatchFailure("lists of lists are not supported", unprocessable=True)
    add, dels = _diff_lists_of_scalars(original, modified, o)
    add = normalize_slice_order(add, modified, mk, k)
    wanted = o.set_element_order and (
        (not o.ignore_deletions and dels)
        or (not o.ignore_changes and not go_equal(original, modified))
    )
    if wanted and not (
        o.semantic and o.ignore_deletions and not add and _keeps_order(original, modified, mk, k)
    ):
        order = modified
    return add, dels, order


def _keeps_order(
    original: Sequence[JSONValue], modified: Sequence[JSONValue], mk: MergeKey | None, k: str
) -> bool:
    """The items of `modified` already appear in `original` in the same relative order."""
    wanted = [identity(v, mk, k) for v in modified]
    wanted_set = set(wanted)
    seen = [i for i in (identity(v, mk, k) for v in original) if i in wanted_set]
    return seen == wanted


def _map_item(items: Sequence[JSONValue], i: int, mk: MergeKey | None) -> JSONObject:
    item = items[i]
    if not isinstance(item, dict):
        raise bad_arg_type("map[string]interface {}", item)
    if mk is None or not mk.present(item):
        raise no_merge_key(item, mk or "")
    return item


def _diff_lists_of_maps(
    original: list[JSONObject], modified: list[JSONObject], fm: FieldMeta, o: DiffOptions
) -> tuple[list[JSONValue], list[JSONValue]]:
    mk = fm.merge_key
    if mk is None:
        raise no_merge_key(original[0], "")
    text = mk.text
    orig = go_sort_by(original, text)
    mod = go_sort_by(modified, text)
    patch: list[JSONValue] = []
    deletions: list[JSONValue] = []
    i = j = 0
    while i < len(orig) or j < len(mod):
        o_in = i < len(orig)
        m_in = j < len(mod)
        if o_in:
            oe = _map_item(orig, i, mk)
            ot = text(oe)
        if m_in:
            me = _map_item(mod, j, mk)
            mt = text(me)
        if o_in and m_in and ot == mt:
            try:
                sub = diff_maps(oe, me, fm.sub, o, fm.retain_keys)
            except PatchFailure as e:
                raise e.at(f"[{mk.primary}={gofmt(mk.raw(me))}]") from None
            if sub:
                sub.update(mk.stub(me))
                patch.append(sub)
            i += 1
            j += 1
        # The texts of one list are all strings, or all tuples (several merge keys).
        elif not o_in or (m_in and ot > mt):  # type: ignore[operator]
            if not o.ignore_changes:
                patch.append(me)
            j += 1
        else:
            if not o.ignore_deletions:
                gone = mk.stub(oe)
                gone[DIRECTIVE] = DELETE
                deletions.append(gone)
            i += 1
    return patch, deletions


def _texts(items: list[JSONObject], mk: MergeKey) -> list[str | tuple[str, ...]]:
    """The merge-key texts Go sorts and matches by; every item must carry the key."""
    if mk.multi:
        for item in items:
            if not mk.present(item):
                raise no_merge_key(item, mk)
        return [mk.text(v) for v in items]
    p = mk.primary
    out: list[str | tuple[str, ...]] = []
    for item in items:
        v = item.get(p, _MISSING)
        if v is _MISSING:
            raise no_merge_key(item, mk)
        out.append(v if type(v) is str else gofmt(v))
    return out


def _diff_unique_maps(
    original: list[JSONObject],
    modified: list[JSONObject],
    fm: FieldMeta,
    mk: MergeKey,
    o: DiffOptions,
) -> tuple[list[JSONValue], list[JSONValue], bool] | None:
    """`_diff_lists_of_maps` for lists whose merge keys are unique (the usual case): the
    same patch in the same order, by lookup instead of sort-and-walk, plus whether the
    order is unchanged. None when keys repeat."""
    o_texts = _texts(original, mk)
    m_texts = _texts(modified, mk)
    by_text = dict(zip(o_texts, original, strict=True))
    m_set = set(m_texts)
    if len(by_text) != len(original) or len(m_set) != len(modified):
        return None
    patch: list[JSONValue] = []
    sub_meta, retain = fm.sub, fm.retain_keys
    for t, me in zip(m_texts, modified, strict=True):
        oe = by_text.get(t)
        if oe is None:
            if not o.ignore_changes:
                patch.append(me)
        elif oe is not me and not (oe == me and (o.ignore_changes or _all_str(me))):
            try:
                sub = diff_maps(oe, me, sub_meta, o, retain)
            except PatchFailure as e:
                raise e.at(f"[{mk.primary}={gofmt(mk.raw(me))}]") from None
            if sub:
                sub.update(mk.stub(me))
                patch.append(sub)
    if len(patch) > 1 and any(isinstance(p, dict) and DIRECTIVE in p for p in patch):
        patch = normalize_slice_order(patch, modified, mk, MAP)
    deletions: list[JSONValue] = []
    if not o.ignore_deletions and not m_set.issuperset(by_text):
        for t in sorted(t for t in o_texts if t not in m_set):
            gone = mk.stub(by_text[t])
            gone[DIRECTIVE] = DELETE
            deletions.append(gone)
    same = o_texts == m_texts and (
        all(type(t) is str for t in m_texts) or _order_same(original, modified, mk)
    )
    return patch, deletions, same


def _order_same(original: list[JSONObject], modified: list[JSONObject], mk: MergeKey) -> bool:
    if len(original) != len(modified):
        return False
    for a, b in zip(original, modified, strict=True):
        for side in (a, b):
            if not isinstance(side, dict):
                raise bad_arg_type("map[string]interface {}", side)
            if not mk.present(side):
                raise no_merge_key(side, mk)
        if a is not b and mk.value(a) != mk.value(b):
            return False
    return True


def _diff_lists_of_scalars(
    original: list[JSONValue], modified: list[JSONValue], o: DiffOptions
) -> tuple[list[JSONValue], list[JSONValue]]:
    orig = go_sort_scalars(original)
    mod = go_sort_scalars(modified)
    add: list[JSONValue] = []
    dels: list[JSONValue] = []
    i = j = 0
    while i < len(orig) or j < len(mod):
        o_in = i < len(orig)
        m_in = j < len(mod)
        ot = gofmt(orig[i]) if o_in else ""
        mt = gofmt(mod[j]) if m_in else ""
        if o_in and m_in and ot == mt:
            i += 1
            j += 1
        elif not o_in or (m_in and ot > mt):
            if not o.ignore_changes:
                add.append(mod[j])
            j += 1
        else:
            if not o.ignore_deletions:
                dels.append(orig[i])
            i += 1
    return add, dedupe_scalars(dels)
