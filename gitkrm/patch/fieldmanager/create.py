"""What a create adds to an object's field set (the Update entry of every create), fast.

The store records this on every create, so the walk is specialised: each (schema node,
key tuple) of a map gets a `Plan` once (its children's path elements in canonical order,
which of them can hold a subtree, their types and how to read them); a map whose children
are all leaves by type is one shared tree; list items' path elements are cached per list
type by their key values. Objects of one kind repeat their shapes, so a create is mostly
dict lookups, one step per map or list that holds more than leaves.

Results share subtrees with each other and with the caches: field-set trees are never
changed in place (see fieldpath), and this module relies on it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from operator import itemgetter
from typing import Final

from gitkrm.patch.fieldmanager.fieldpath import DOT, Tree, sort_key
from gitkrm.patch.fieldmanager.typed import (
    ATOMIC,
    DEDUCED,
    LIST,
    LIST_ATOMIC,
    LIST_MAP,
    MAP,
    SCALAR,
    SchemaType,
)
from gitkrm.patch.fieldmanager.walk import MISSING, SchemaMismatch, located_item_pe

# How a child's node is made. New values (absent before): a leaf by type is `{}`; a
# granular map or list is itself and everything under it when it is a non-empty dict or
# list, else `{}`. Fields a Go zero value holds already (`{}` for a struct, null for a
# slice): only what is under them counts (no node at all when nothing is).
_LEAF: Final = 0
_MAP: Final = 1
_LIST: Final = 2
_ZERO_MAP: Final = 3
_ZERO_LIST: Final = 4
_ZERO_LEAF: Final = 5
_META: Final = 6  # the object's metadata: what is under it, less the server-owned fields
_ROOT: Final = 7  # the object itself (plan_for)

_E: Final[Tree] = {}
# Plans and path elements cached per type: bounded, for maps whose keys vary per object
# (labels, ConfigMap data); past the bound the rest are computed and not kept.
_MAX_PLANS: Final = 256
_MAX_PES: Final = 4096

_SERVER_META: Final = frozenset(
    {
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    }
)
_ROOT_SKIP: Final = frozenset({"apiVersion", "kind"})
_NONE: Final = frozenset[str]()
_BY_KEY = itemgetter(0)

Dynamic = tuple[tuple[str, str, SchemaType, int], ...]


def _new_mode(t: SchemaType) -> int:
    k = t.kind
    if k in (SCALAR, ATOMIC):
        return _LEAF
    if k == MAP:
        return _LEAF if t.atomic else _MAP
    if k == LIST:
        return _LEAF if t.list_type == LIST_ATOMIC else _LIST
    return _MAP  # DEDUCED: maps granular, lists and scalars leaves


def _zero_mode(t: SchemaType) -> int:
    if t.kind == LIST:
        return _ZERO_LIST
    if t.kind == MAP and not t.atomic:
        return _ZERO_MAP
    return _ZERO_LEAF


class Plan:
    """One map shape: `template` holds every child's node in canonical order, leaves
    filled in; `dynamic` lists the (key, path element, type, mode) whose node depends on
    the value. A plan without dynamic children is its own result (`template`)."""

    __slots__ = ("dynamic", "template")

    def __init__(self, template: Tree, dynamic: Dynamic) -> None:
        self.template = template
        self.dynamic = dynamic


def _plan(
    t: SchemaType,
    keys: tuple[str, ...],
    cache: dict[tuple[str, ...], Plan],
    *,
    node: bool,
    zero_of: frozenset[str],
    skip: frozenset[str] = _NONE,
    root: bool = False,
) -> Plan:
    """The plan of `keys` under `t`, kept in `cache` (while it has room). `node`: the map
    is a node itself (a `.` member); `zero_of`: keys that are zero fields; `skip`: keys
    left out; `root`: the object itself."""
    template: Tree = {DOT: _E} if node else {}
    dynamic: list[tuple[str, str, SchemaType, int]] = []
    for name in sorted(keys):
        if name in skip:
            continue
        ct = t.field(name)[0]
        pe = "f:" + name
        if root and name == "metadata":
            if ct.kind == DEDUCED or (ct.kind == MAP and not ct.atomic):
                mode = _META
            else:
                continue  # a leaf (an odd schema): the server owns it
        elif name in zero_of:
            mode = _zero_mode(ct)
        else:
            mode = _new_mode(ct)
        template[pe] = _E
        if mode != _LEAF:
            dynamic.append((name, pe, ct, mode))
    plan = Plan(template, tuple(dynamic))
    if len(cache) < _MAX_PLANS:
        cache[keys] = plan
    return plan


def plan_for(t: SchemaType, keys: tuple[str, ...], mode: int) -> Plan:
    """The plan the walk uses for a map of `keys` read in `mode` (_MAP, _ZERO_MAP,
    _META, or _ROOT for the object itself)."""
    if mode == _ROOT:
        cache, node, zero_of, skip, root = t.root_plans, False, t.zero, _ROOT_SKIP, True
    elif mode == _MAP:
        cache, node, zero_of, skip, root = t.new_plans, True, _NONE, _NONE, False
    elif mode == _ZERO_MAP:
        cache, node, zero_of, skip, root = t.zero_plans, False, t.zero, _NONE, False
    else:
        cache, node, zero_of, skip, root = t.meta_plans, False, t.zero, _SERVER_META, False
    plan: Plan | None = cache.get(keys)
    if plan is None:
        plan = _plan(t, keys, cache, node=node, zero_of=zero_of, skip=skip, root=root)
    return plan


def walk(t: SchemaType, obj: Mapping[str, object]) -> Tree:
    """What a create adds (SMD Compare against the kind's zero value: added and modified
    paths), without the server-owned fields, in canonical order, built directly."""
    keys = tuple(obj)
    plan: Plan | None = t.root_plans.get(keys)
    if plan is None:
        plan = _plan(t, keys, t.root_plans, node=False, zero_of=t.zero, skip=_ROOT_SKIP, root=True)
    return _filled(plan, obj)


def _filled(map_plan: Plan, v: Mapping[str, object]) -> Tree:
    """A copy of the map's template with the nodes of its dynamic children set (or
    dropped). Child maps are read here, without a call unless they have dynamic children
    themselves."""
    out = map_plan.template.copy()
    plan: Plan | None
    for name, pe, ct, mode in map_plan.dynamic:
        cv = v[name]
        if mode == _MAP:
            if cv and type(cv) is dict:
                keys = tuple(cv)
                plan = ct.new_plans.get(keys)
                if plan is None:
                    plan = _plan(ct, keys, ct.new_plans, node=True, zero_of=_NONE)
                out[pe] = _filled(plan, cv) if plan.dynamic else plan.template
        elif mode == _LIST:
            if cv and type(cv) is list:
                try:
                    out[pe] = _items(ct, cv, {DOT: _E})
                except SchemaMismatch as e:
                    raise e.at(pe) from None
        elif mode == _ZERO_MAP:
            if type(cv) is dict:
                if cv:
                    keys = tuple(cv)
                    plan = ct.zero_plans.get(keys)
                    if plan is None:
                        plan = _plan(ct, keys, ct.zero_plans, node=False, zero_of=ct.zero)
                    node = _filled(plan, cv) if plan.dynamic else plan.template
                    if node:
                        out[pe] = node
                        continue
                del out[pe]
        elif mode == _ZERO_LIST:
            if cv is None:
                del out[pe]
            elif cv and type(cv) is list and ct.list_type != LIST_ATOMIC:
                try:
                    node = _items(ct, cv, {})
                except SchemaMismatch as e:
                    raise e.at(pe) from None
                if node:
                    out[pe] = node
                else:
                    del out[pe]
        elif mode == _META:
            if type(cv) is not dict:
                del out[pe]  # itself, as a leaf, the server owns
            else:
                keys = tuple(cv)
                plan = ct.meta_plans.get(keys)
                if plan is None:
                    plan = _plan(
                        ct, keys, ct.meta_plans, node=False, zero_of=ct.zero, skip=_SERVER_META
                    )
                node = _filled(plan, cv) if plan.dynamic else plan.template
                if node:
                    out[pe] = node
                else:
                    del out[pe]
        elif cv == {}:  # _ZERO_LEAF
            del out[pe]
    return out


def _items(t: SchemaType, items: list[object], out: Tree) -> Tree:
    """`out` with each item's node under its path element, in canonical order (the first
    of equal elements wins). `t` is a granular (set or keyed) list."""
    info = t.list_info or _list_info(t)
    single, names, elem, emode = info
    pes = t.item_pes
    pairs: list[tuple[tuple[object, ...], str, object]] = []
    for i, item in enumerate(items):
        # the cache key: the item's key values (and their types: 1, 1.0 and true differ)
        if single is not None:
            if type(item) is dict:
                kv = item.get(single, MISSING)
                ck: Hashable = (kv, type(kv))
            else:
                ck = MISSING  # item_pe says what is wrong
        elif names:
            if type(item) is dict:
                vals = tuple([item.get(n, MISSING) for n in names])
                ck = (vals, tuple(map(type, vals)))
            else:
                ck = MISSING
        else:
            ck = (item, type(item))
        try:
            hit = pes.get(ck)
        except TypeError:  # an unhashable value: a list or map as a key or set member
            hit = None
            ck = MISSING
        if hit is None:
            hit = _new_pe(t, i, item, ck)
        pairs.append((hit[0], hit[1], item))
    if len(pairs) > 1:
        pairs.sort(key=_BY_KEY)
    plan: Plan | None
    for _, pe, item in pairs:
        if pe in out:
            continue
        if not item:
            out[pe] = _E
        elif emode == _MAP:
            if type(item) is dict:
                keys = tuple(item)
                plan = elem.new_plans.get(keys)
                if plan is None:
                    plan = _plan(elem, keys, elem.new_plans, node=True, zero_of=_NONE)
                try:
                    out[pe] = _filled(plan, item) if plan.dynamic else plan.template
                except SchemaMismatch as e:
                    raise e.at(pe) from None
            else:
                out[pe] = _E
        elif emode == _LIST and type(item) is list:
            try:
                out[pe] = _items(elem, item, {DOT: _E})
            except SchemaMismatch as e:
                raise e.at(pe) from None
        else:
            out[pe] = _E
    return out


def _list_info(t: SchemaType) -> tuple[str | None, tuple[str, ...], SchemaType, int]:
    """What `_items` reads of a list type: its single key field (or its key fields; none
    for a set), its item type and how items are read."""
    keyed = t.list_type == LIST_MAP
    single = t.keys[0] if keyed and len(t.keys) == 1 else None
    names = t.keys if keyed and single is None else ()
    info = (single, names, t.elem, _new_mode(t.elem))
    t.list_info = info
    return info


def _new_pe(t: SchemaType, i: int, item: object, ck: Hashable) -> tuple[tuple[object, ...], str]:
    """An item's sort key and path element, kept by its cache key `ck` (MISSING: not)."""
    pe = located_item_pe(t, i, item)
    hit = (sort_key(pe), pe)
    if ck is not MISSING and len(t.item_pes) < _MAX_PES:
        t.item_pes[ck] = hit
    return hit


__all__ = ["Plan", "plan_for", "walk"]
