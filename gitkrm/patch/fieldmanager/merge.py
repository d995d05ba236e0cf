"""Apply's merge and pruning: SMD `TypedValue.Merge`, `RemoveItems` and `Updater.prune`.

`merge` lays an applied configuration over the live object: leaves and atomic values
take the configuration's value, granular maps merge key by key, keyed lists and sets
merge item by item in SMD's order (the configuration's order for the items both hold,
the live object's other items kept where they stood). `prune` then drops what the
applier set last time and no longer sets, unless another manager owns it. Results share
unchanged subtrees with the inputs; inputs are never changed.

An explicit null in the configuration leaves no null behind where the live object has
none (the API server decodes the merged object into its types, where null is "unset",
and a custom resource's non-nullable nulls are pruned), and keeps a null the live object
holds (a pod template's `creationTimestamp: null` as Go serializes it): applying
`creationTimestamp: null` twice, or onto an object created with it, changes nothing.
"""

from __future__ import annotations

from typing import Final

import orjson

from gitkrm.patch.fieldmanager.fieldpath import DOT, Tree, difference, intersection, union
from gitkrm.patch.fieldmanager.typed import DEDUCED, LIST, MAP, SchemaType
from gitkrm.patch.fieldmanager.walk import MISSING, field_set, is_leaf_value, item_pe


class _Removed:
    def __repr__(self) -> str:
        return "<removed>"


REMOVED: Final = _Removed()


def merge(t: SchemaType, live: object, config: object) -> object:
    """The configuration laid over the live value (both present)."""
    if config is live:
        return config
    if is_leaf_value(t, live) or is_leaf_value(t, config):
        return without_nulls(config)
    if type(live) is dict and type(config) is dict:
        if not live and not config:
            return config
        return _merge_map(t, live, config)
    if type(live) is list and type(config) is list:
        if not live and not config:
            return config
        return _merge_list(t, live, config)
    return without_nulls(config)


def without_nulls(v: object) -> object:
    """`v` without the nulls inside its maps (`v` itself when it holds none)."""
    if type(v) is not dict and type(v) is not list:
        return v
    try:
        if b"null" not in orjson.dumps(v):  # most objects hold none: one C-speed pass
            return v
    except TypeError:
        pass
    return _drop_nulls(v)


def _drop_nulls(v: object) -> object:
    if type(v) is dict:
        out: dict[str, object] | None = None
        for k, cv in v.items():
            nv = MISSING if cv is None else _drop_nulls(cv)
            if nv is not cv:
                if out is None:
                    out = dict(v)
                if nv is MISSING:
                    del out[k]
                else:
                    out[k] = nv
        return v if out is None else out
    if type(v) is list:
        items: list[object] | None = None
        for i, item in enumerate(v):
            ni = _drop_nulls(item)
            if ni is not item:
                if items is None:
                    items = list(v)
                items[i] = ni
        return v if items is None else items
    return v


def _merge_map(
    t: SchemaType, live: dict[str, object], config: dict[str, object]
) -> dict[str, object]:
    out = dict(live)
    field = t.field
    for k, cv in config.items():
        lv = live.get(k, MISSING)
        if cv is None:  # an explicit null: the field is cleared (a live null stays)
            if lv is not None:
                out.pop(k, None)
            continue
        out[k] = without_nulls(cv) if lv is MISSING or lv is None else merge(field(k)[0], lv, cv)
    return out


def _merge_list(t: SchemaType, live: list[object], config: list[object]) -> list[object]:
    lp = _pes(t, live)
    rp = _pes(t, config)
    lmap = dict(lp)
    rmap = dict(rp)
    shared = [pe for pe, _ in rp if pe in lmap]
    si = 0
    nxt: str | None = shared[0] if shared else None
    si = 1
    merged_r: set[str] = set()
    out: list[object] = []
    elem = t.elem
    li = ri = 0
    nl, nr = len(lp), len(rp)
    while li < nl or ri < nr:
        if li < nl and ri < nr:
            pe = lp[li][0]
            if pe == rp[ri][0]:
                merged_r.add(pe)
                out.append(merge(elem, lmap[pe], rmap[pe]))
                li += 1
                ri += 1
                nxt = shared[si] if si < len(shared) else None
                si += 1
                continue
            if pe in rmap and nxt is not None and nxt != pe:
                li += 1  # a shared item, but not the one due now: placed with its config
                continue
        if li < nl:
            pe = lp[li][0]
            if pe not in rmap:
                out.append(lp[li][1])
                li += 1
                continue
            if pe in merged_r:
                li += 1
                continue
        if ri < nr:
            pe, rv = rp[ri]
            merged_r.add(pe)
            lv = lmap.get(pe, MISSING)
            out.append(without_nulls(rv) if lv is MISSING else merge(elem, lv, rv))
            ri += 1
            if nxt is not None and nxt == pe:
                nxt = shared[si] if si < len(shared) else None
                si += 1
    return out


def _pes(t: SchemaType, items: list[object]) -> list[tuple[str, object]]:
    seen: set[str] = set()
    out: list[tuple[str, object]] = []
    for i, item in enumerate(items):
        pe = item_pe(t, i, item)
        if pe not in seen:
            seen.add(pe)
            out.append((pe, item))
    return out


def remove_items(t: SchemaType, v: object, paths: Tree) -> object:
    """`v` without the members of `paths` (relative to v); REMOVED when nothing is left
    of a map or list that lost items (SMD leaves a null there; the field is dropped)."""
    if not paths:
        return v
    if is_leaf_value(t, v):
        if t.kind in (MAP, LIST) or (t.kind == DEDUCED and isinstance(v, list)):
            return REMOVED  # SMD: removing under an atomic value leaves nothing
        return v
    if not v:
        return REMOVED
    if type(v) is dict:
        out: dict[str, object] = {}
        field = t.field
        for k, cv in v.items():
            node = paths.get("f:" + k)
            if node is None:
                out[k] = cv
            elif node and DOT not in node:
                r = remove_items(field(k)[0], cv, node)
                if r is not REMOVED:
                    out[k] = r
        return out if out else REMOVED
    assert isinstance(v, list)  # the granular values that are not maps
    items: list[object] = []
    elem = t.elem
    for i, item in enumerate(v):
        node = paths.get(item_pe(t, i, item))
        if node is None:
            items.append(item)
        elif node and DOT not in node:
            r = remove_items(elem, item, node)
            if r is not REMOVED:
                items.append(r)
    return items if items else REMOVED


def ensure_named(t: SchemaType, s: Tree) -> Tree:
    """SMD `EnsureNamedFieldsAreMembers`: a declared struct field with paths under it is
    a member too, so that pruning can drop the field as a whole."""
    if not s:
        return s
    out: Tree = {}
    for pe, node in s.items():
        if pe == DOT or not node:
            out[pe] = node
            continue
        if pe.startswith("f:") and t.kind in (MAP, DEDUCED):
            ft, declared = t.field(pe[2:])
        elif t.kind == LIST:
            ft, declared = t.elem, False
        else:
            out[pe] = node
            continue
        sub = ensure_named(ft, node)
        if declared and DOT not in sub:
            sub = {DOT: {}, **sub}
        out[pe] = sub
    return out


def prune(t: SchemaType, merged: object, *, last: Tree, managed: Tree) -> object:
    """SMD `Updater.prune`: remove what the applier owned last time (`last`) and applies no
    longer, unless some manager (`managed`: all sets, the applier's new one included)
    owns it; items of others the removal took along are added back."""
    if not last:
        return merged
    last_n = ensure_named(t, last)
    pruned = _remove_root(t, merged, last_n)
    merged_set = ensure_named(t, field_set(t, merged))
    pruned_set = ensure_named(t, field_set(t, pruned))
    owned = ensure_named(t, managed)
    pruned = _remove_root(t, merged, difference(merged_set, union(pruned_set, owned)))
    pruned_set = ensure_named(t, field_set(t, pruned))
    return _remove_root(t, merged, intersection(difference(merged_set, pruned_set), last_n))


def _remove_root(t: SchemaType, obj: object, paths: Tree) -> object:
    out = remove_items(t, obj, paths)
    return {} if out is REMOVED else out
