"""Compiled shapes: the create walk once per recurring object shape, as straight-line code.

Objects of one kind mostly repeat a shape (the same keys in every map, the same list item
keys), and a create's field set depends on the shape only. When the walk (create.walk)
gives a kind's objects the same result twice, the shape of the second is compiled into a
function of checks that retrace the walk's every decision (each map's key tuple, each
list's length and item keys, each value's emptiness and type where the walk looks at
it); a later object passing them gets that result without a walk. An object failing them
is walked: the checks only decide whether the walk may be skipped.

Results are shared by every object of the shape: field-set trees are never changed in
place (see fieldpath).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, cast

from gitkrm.patch.fieldmanager.create import (
    _LIST,
    _MAP,
    _META,
    _ROOT,
    _ZERO_LIST,
    _ZERO_MAP,
    _new_mode,
    plan_for,
    walk,
)
from gitkrm.patch.fieldmanager.fieldpath import Tree
from gitkrm.patch.fieldmanager.typed import LIST_ATOMIC, LIST_MAP, LIST_SET, SchemaType, Shape
from gitkrm.patch.fieldmanager.walk import MISSING, SchemaMismatch

_MAX_SHAPES: Final = 8  # per root key tuple of a type
_MAX_ROOTS: Final = 64  # root key tuples remembered per type
_MAX_CHECKS: Final = 2000  # a shape larger than this is not compiled


_MAX_SHARED: Final = 4096
# The results of compiled shapes (kept here so that their ids stay theirs): a writer may
# cache their serialized form (the store does).
_SHARED: dict[int, Tree] = {}


def is_shared(tree: object) -> bool:
    """Whether `tree` is the result of a compiled shape (one object for many creates)."""
    return _SHARED.get(id(tree)) is tree


def created(t: SchemaType, obj: Mapping[str, object]) -> Tree:
    """What a create adds (SMD Compare against the kind's zero value: added and modified
    paths), without the server-owned fields, in canonical order (see create.walk)."""
    keys = tuple(obj)
    shapes: list[Shape] | None = t.shapes.get(keys)
    if shapes:
        for shape in shapes:
            hit = shape(obj)
            if hit is not None:
                return hit
    out = walk(t, obj)
    last = t.last_walk.get(keys)
    if last is _NEVER or (shapes is not None and len(shapes) >= _MAX_SHAPES):
        return out
    if last is not None and last == out:  # a recurring result: compile this shape
        compiled = compile_shape(t, obj, out)
        if compiled is None:
            t.last_walk[keys] = _NEVER
        else:
            if shapes is not None:
                shapes.append(compiled)
            elif len(t.shapes) < _MAX_ROOTS:
                t.shapes[keys] = [compiled]
            if len(_SHARED) < _MAX_SHARED:
                _SHARED[id(out)] = out
    elif last is not None or len(t.last_walk) < _MAX_ROOTS:
        t.last_walk[keys] = out
    return out


class _Never:
    """In last_walk: this root key tuple has a shape that cannot be compiled."""


_NEVER: Final = _Never()


class _Emitter:
    """The lines of one shape function and the constants they name."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, object] = {"MISSING": MISSING}
        self.n = 0

    def var(self, expr: str) -> str:
        self.n += 1
        name = f"v{self.n}"
        self.lines.append(f"    {name} = {expr}")
        return name

    def const(self, value: object) -> str:
        name = f"K{len(self.consts)}"
        self.consts[name] = value
        return name

    def fail_if(self, cond: str) -> None:
        if len(self.lines) > _MAX_CHECKS:
            raise _TooBig
        self.lines.append(f"    if {cond}: return None")


class _TooBig(Exception):
    pass


class _Unhashable(Exception):
    pass


def compile_shape(t: SchemaType, obj: Mapping[str, object], result: Tree) -> Shape | None:
    """A function returning `result` for objects of `obj`'s shape, None for others (None:
    the shape cannot be compiled: too large, or a set of maps or lists)."""
    em = _Emitter()
    try:
        _map(em, "v0", t, obj, _ROOT)
    except (_TooBig, _Unhashable, SchemaMismatch):
        return None
    name = em.const(result)
    source = "def shape(v0):\n" + "\n".join(em.lines) + f"\n    return {name}\n"
    scope: dict[str, object] = dict(em.consts)
    # the source is ours: names, key tuples and values are constants in `scope`
    exec(compile(source, "<gitkrm create shape>", "exec"), scope)
    return cast("Shape", scope["shape"])  # the function the source defines


def _map(em: _Emitter, var: str, t: SchemaType, v: Mapping[str, object], mode: int) -> None:
    """Checks that `var` is a dict with v's keys, then those of its dynamic children."""
    keys = tuple(v)
    em.fail_if(f"type({var}) is not dict or tuple({var}) != {em.const(keys)}")
    for name, _pe, ct, cmode in plan_for(t, keys, mode).dynamic:
        cv = v[name]
        c = em.var(f"{var}[{name!r}]")
        if cmode == _MAP:
            if cv and type(cv) is dict:
                _map(em, c, ct, cv, _MAP)
            else:
                em.fail_if(f"{c} and type({c}) is dict")
        elif cmode == _LIST:
            if cv and type(cv) is list:
                _list(em, c, ct, cv)
            else:
                em.fail_if(f"{c} and type({c}) is list")
        elif cmode == _ZERO_MAP:
            if type(cv) is dict:
                if cv:
                    _map(em, c, ct, cv, _ZERO_MAP)
                else:
                    em.fail_if(f"type({c}) is not dict or {c}")
            else:
                em.fail_if(f"type({c}) is dict")
        elif cmode == _ZERO_LIST:
            if cv is None:
                em.fail_if(f"{c} is not None")
            elif cv and type(cv) is list and ct.list_type != LIST_ATOMIC:
                _list(em, c, ct, cv)
            elif ct.list_type == LIST_ATOMIC:
                em.fail_if(f"{c} is None")
            else:
                em.fail_if(f"{c} is None or ({c} and type({c}) is list)")
        elif cmode == _META:
            if type(cv) is dict:
                _map(em, c, ct, cv, _META)
            else:
                em.fail_if(f"type({c}) is dict")
        elif cv == {}:  # a zero leaf: dropped when it is {}
            em.fail_if(f"type({c}) is not dict or {c}")
        else:
            em.fail_if(f"type({c}) is dict and not {c}")


def _list(em: _Emitter, var: str, t: SchemaType, items: list[object]) -> None:
    """Checks that `var` is a list of as many items with the same key values (so the same
    path elements in the same order), each item read as the walk reads it."""
    em.fail_if(f"type({var}) is not list or len({var}) != {len(items)}")
    elem = t.elem
    emode = _new_mode(elem)
    for i, item in enumerate(items):
        x = em.var(f"{var}[{i}]")
        keyed = t.list_type == LIST_MAP
        if keyed and type(item) is not dict:
            raise SchemaMismatch("not a map")  # the walk refused it: nothing to compile
        if not item:
            em.fail_if(x)
        elif emode == _MAP and type(item) is dict:
            _map(em, x, elem, item, _MAP)  # checks its keys: absent key fields stay absent
        elif emode == _MAP:
            em.fail_if(f"not {x} or type({x}) is dict")
        elif emode == _LIST and type(item) is list:
            _list(em, x, elem, item)
        elif emode == _LIST:
            em.fail_if(f"not {x} or type({x}) is list")
        else:
            em.fail_if(f"not {x}")
        if keyed and isinstance(item, dict):  # keyed items are maps (checked above)
            if not (item and emode == _MAP):
                em.fail_if(f"type({x}) is not dict or tuple({x}) != {em.const(tuple(item))}")
            for key in t.keys:
                if key in item:
                    _same_scalar(em, f"{x}[{key!r}]", item[key])
        elif t.list_type == LIST_SET:
            _same_scalar(em, x, item)


def _same_scalar(em: _Emitter, var: str, value: object) -> None:
    """`var` equals `value` and has its type (1, 1.0 and true make different elements)."""
    tv = type(value)
    if tv is str:  # only a str equals a str (JSON has no subclasses)
        em.fail_if(f"{var} != {em.const(value)}")
        return
    if tv not in (int, float, bool) and value is not None:
        raise _Unhashable
    em.fail_if(f"type({var}) is not {em.const(tv)} or {var} != {em.const(value)}")


__all__ = ["compile_shape", "created", "is_shared"]
