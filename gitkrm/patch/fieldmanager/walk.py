"""The field set of an object (SMD `ToFieldSet`) and the difference of two objects (SMD
`Compare`: added, removed and modified paths), as FieldsV1 trees.

One walk each, building the trees directly; unchanged subtrees are skipped by an equality
check (C speed) before any descent, so an update costs in proportion to what changed.
"""

from __future__ import annotations

from typing import Final

from gitkrm.patch.fieldmanager.fieldpath import DOT, Tree, path_string
from gitkrm.patch.fieldmanager.fieldsv1 import index_pe, key_pe, value_pe
from gitkrm.patch.fieldmanager.typed import (
    ATOMIC,
    DEDUCED,
    LIST,
    LIST_ATOMIC,
    LIST_MAP,
    LIST_SET,
    MAP,
    NO_DEFAULT,
    SCALAR,
    SchemaType,
)


class SchemaMismatch(Exception):
    """A value SMD cannot type (a keyed list item without its key, a null item)."""

    def __init__(self, message: str, path: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path = path

    def at(self, pe: str) -> SchemaMismatch:
        return SchemaMismatch(self.message, (pe, *self.path))

    def __str__(self) -> str:
        where = path_string(self.path)
        return f"{where}: {self.message}" if where else self.message


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final = _Missing()


def item_pe(t: SchemaType, index: int, item: object) -> str:
    """The path element of list item `item` (t is the list's type)."""
    lt = t.list_type
    if lt == LIST_MAP:
        if not isinstance(item, dict):
            if item is None:
                raise SchemaMismatch("associative list with keys may not have a null element")
            raise SchemaMismatch("associative list with keys may not have non-map elements")
        keys = t.keys
        if len(keys) == 1:
            v = item.get(keys[0], MISSING)
            if v is not MISSING:
                return key_pe(keys, (v,))
        vals: list[object] = []
        for name, default in zip(keys, t.key_defaults or (NO_DEFAULT,) * len(keys), strict=True):
            v = item.get(name, MISSING)
            if v is MISSING:
                if default is NO_DEFAULT:
                    raise SchemaMismatch(
                        "associative list with keys has an element that omits key field "
                        f'"{name}" (and doesn\'t have default value)'
                    )
                v = default
            vals.append(v)
        return key_pe(keys, tuple(vals))
    if lt == LIST_SET:
        return value_pe(item)
    return index_pe(index)


def located_item_pe(t: SchemaType, index: int, item: object) -> str:
    """`item_pe`, a mismatch located at the item (`i:<index>`)."""
    try:
        return item_pe(t, index, item)
    except SchemaMismatch as e:
        raise e.at(f"i:{index}") from None


def _is_leaf(t: SchemaType, v: object) -> bool:
    k = t.kind
    if k in (SCALAR, ATOMIC):
        return True
    if k == MAP:
        return t.atomic or not isinstance(v, dict | None)
    if k == LIST:
        return t.list_type == LIST_ATOMIC or not isinstance(v, list | None)
    return not isinstance(v, dict)  # DEDUCED: maps granular, everything else a leaf


# --- ToFieldSet ----------------------------------------------------------------------


def field_set(t: SchemaType, obj: object) -> Tree:
    """The FieldsV1 tree of a whole value (unordered; `fieldpath.canonical` orders it)."""
    if _is_leaf(t, obj) or obj is None:
        return {}
    return _fs(t, obj)


def _fs(t: SchemaType, v: object) -> Tree:
    """The children of a non-leaf value (a dict or list of a granular type)."""
    out: Tree = {}
    if type(v) is dict:
        field = t.field
        for k, cv in v.items():
            ft, declared = field(k)
            pe = "f:" + k
            if _is_leaf(ft, cv):
                out[pe] = {}
                continue
            sub = _fs(ft, cv) if cv else {}
            if cv is None or (not cv and type(cv) is dict) or not declared:
                out[pe] = {DOT: {}, **sub} if sub else {}
            elif sub:
                out[pe] = sub
    elif type(v) is list:
        elem = t.elem
        for i, item in enumerate(v):
            ipe = located_item_pe(t, i, item)
            if _is_leaf(elem, item) or not item:
                out[ipe] = {}
            else:
                try:
                    sub = _fs(elem, item)
                except SchemaMismatch as e:
                    raise e.at(ipe) from None
                out[ipe] = {DOT: {}, **sub} if sub else {}
    return out


# --- Compare ---------------------------------------------------------------------------


class Comparison:
    """Paths added, removed and modified from one object to the next."""

    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:
        self.added: Tree = {}
        self.removed: Tree = {}
        self.modified: Tree = {}

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.modified)


def compare(t: SchemaType, old: object, new: object) -> Comparison:
    """SMD's `Compare` of two whole objects (old `{}` for a create)."""
    c = Comparison()
    if old is new or (type(old) is dict and type(new) is dict and old == new):
        return c
    _cmp_map(t, old, new, c.added, c.removed, c.modified)
    return c


def _all(t: SchemaType, v: object) -> Tree:
    """The node of a value present on one side only: itself and every path under it,
    non-leaf ones included (SMD's postItemHook marks each as added or removed)."""
    if not v or _is_leaf(t, v):
        return {}
    out: Tree = {DOT: {}}
    if type(v) is dict:
        field = t.field
        for k, cv in v.items():
            if not cv:
                out["f:" + k] = {}
                continue
            ft = field(k)[0]
            try:
                out["f:" + k] = _all(ft, cv)
            except SchemaMismatch as e:
                raise e.at("f:" + k) from None
    elif isinstance(v, list):  # the other granular value
        elem = t.elem
        for i, item in enumerate(v):
            ipe = located_item_pe(t, i, item)
            try:
                out[ipe] = _all(elem, item)
            except SchemaMismatch as e:
                raise e.at(ipe) from None
    return out


def _cmp_map(t: SchemaType, lm: object, rm: object, a: Tree, r: Tree, m: Tree) -> None:
    """Compare two maps (either may be null)."""
    field = t.field
    zero = t.zero
    ld = lm if isinstance(lm, dict) else None
    rd = rm if isinstance(rm, dict) else None
    if ld:
        for k, lv in ld.items():
            rv = rd.get(k, MISSING) if rd else MISSING
            if rv is lv:
                continue
            ft, _ = field(k)
            if rv is MISSING and k in zero:
                rv = {} if ft.kind == MAP else None
            try:
                _cmp(ft, "f:" + k, lv, rv, a, r, m)
            except SchemaMismatch as e:
                raise e.at("f:" + k) from None
    if rd:
        for k, rv in rd.items():
            if ld and k in ld:
                continue
            ft, _ = field(k)
            try:
                if k in zero:
                    _cmp(ft, "f:" + k, {} if ft.kind == MAP else None, rv, a, r, m)
                else:
                    a["f:" + k] = _all(ft, rv)
            except SchemaMismatch as e:
                raise e.at("f:" + k) from None


def _cmp(t: SchemaType, pe: str, lv: object, rv: object, a: Tree, r: Tree, m: Tree) -> None:
    if lv is MISSING:
        a[pe] = _all(t, rv)
        return
    if rv is MISSING:
        r[pe] = _all(t, lv)
        return
    if lv == rv and type(lv) is type(rv):
        return
    lleaf = _is_leaf(t, lv)
    rleaf = _is_leaf(t, rv)
    if lleaf or rleaf:
        m[pe] = {}
        if not lleaf and lv:
            r[pe] = {DOT: {}, **_fs(t, lv)}
        if not rleaf and rv:
            a[pe] = {DOT: {}, **_fs(t, rv)}
        return
    if not lv and not rv:  # both empty or null: a leaf, so that {} vs null is a change
        m[pe] = {}
        return
    sa: Tree = {}
    sr: Tree = {}
    sm: Tree = {}
    if type(lv) is list or type(rv) is list:
        _cmp_list(t, lv, rv, sa, sr, sm)
    else:
        _cmp_map(t, lv, rv, sa, sr, sm)
    if sa:
        a[pe] = sa
    if sr:
        r[pe] = sr
    if sm:
        m[pe] = sm


def _index(t: SchemaType, items: object) -> dict[str, object]:
    out: dict[str, object] = {}
    if isinstance(items, list):
        for i, item in enumerate(items):
            pe = located_item_pe(t, i, item)
            out.setdefault(pe, item)
    return out


def _cmp_list(t: SchemaType, ll: object, rl: object, a: Tree, r: Tree, m: Tree) -> None:
    """Compare two granular lists (either may be null)."""
    lidx = _index(t, ll)
    ridx = _index(t, rl)
    elem = t.elem
    for pe, li in lidx.items():
        ri = ridx.get(pe, MISSING)
        if ri is not li:
            try:
                _cmp(elem, pe, li, ri, a, r, m)
            except SchemaMismatch as e:
                raise e.at(pe) from None
    for pe, ri in ridx.items():
        if pe not in lidx:
            try:
                a[pe] = _all(elem, ri)
            except SchemaMismatch as e:
                raise e.at(pe) from None


def is_leaf_value(t: SchemaType, v: object) -> bool:
    return _is_leaf(t, v)


__all__ = [
    "DEDUCED",
    "MISSING",
    "Comparison",
    "SchemaMismatch",
    "compare",
    "field_set",
    "is_leaf_value",
    "item_pe",
]
