"""Field sets as FieldsV1-shaped trees, and the set algebra structured-merge-diff needs.

A set is kept in the very shape `managedFields[].fieldsV1` has on the wire: a dict from
serialized path elements (`f:name`, `k:{"name":"x"}`, `v:"a"`, `i:0`) to child dicts,
where a child `{}` is a member (a leaf) and a child holding `"."` is a member with
children of its own. Keeping that shape means stored entries need no decoding on the hot
path and unchanged sets are written back as they were read. Trees are shared, never
changed in place once built.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, TypeAlias

import orjson

from gitkrm.krm.types import FieldsV1

Tree: TypeAlias = FieldsV1

DOT: Final = "."
_LEAF: Final[Tree] = {DOT: {}}
_SORT_KEYS: dict[str, tuple[object, ...]] = {}
_MAX_SORT_KEYS = 65536


def _x(node: Tree) -> Tree:
    """A node with its membership spelled out (`{}` is `{".": {}}`)."""
    return node if node else _LEAF


def _c(node: Tree) -> Tree:
    """The wire form of a non-empty node (`{".": {}}` is `{}`)."""
    return {} if len(node) == 1 and DOT in node else node


def union(a: Tree, b: Tree) -> Tree:
    if not b or a is b:
        return a
    if not a:
        return b
    out = dict(a)
    for k, vb in b.items():
        va = out.get(k)
        if va is None:
            out[k] = vb
        elif k != DOT and va is not vb and va != vb:
            out[k] = _c(union(_x(va), _x(vb)))
    return out


def difference(a: Tree, b: Tree) -> Tree:
    """The paths of `a` that are not in `b` (a member of b removes only that member)."""
    if not a or not b:
        return a
    out: Tree = {}
    changed = False
    for k, va in a.items():
        vb = b.get(k)
        if vb is None:
            out[k] = va
            continue
        changed = True
        if k == DOT:
            continue
        d = difference(_x(va), _x(vb))
        if d:
            out[k] = _c(d)
    return out if changed else a


def intersection(a: Tree, b: Tree) -> Tree:
    if not a or not b:
        return {}
    out: Tree = {}
    for k, va in a.items():
        vb = b.get(k)
        if vb is None:
            continue
        if k == DOT:
            out[k] = va
            continue
        i = intersection(_x(va), _x(vb))
        if i:
            out[k] = _c(i)
    return out


def has(tree: Tree, path: tuple[str, ...]) -> bool:
    """Whether `path` is a member of the set."""
    node: Tree | None = tree
    for pe in path:
        if not node:
            return False
        node = node.get(pe)
        if node is None:
            return False
    return node is not None and (not node or DOT in node)


def members(tree: Tree, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every member path, in SMD's iteration order (members of a level, then children)."""
    keys = sorted((k for k in tree if k != DOT), key=sort_key)
    for k in keys:
        v = tree[k]
        if not v or DOT in v:
            yield (*prefix, k)
    for k in keys:
        v = tree[k]
        if v:
            yield from members(v, (*prefix, k))


def canonical(tree: Tree) -> Tree:
    """The tree in SMD's serialization order: `.` first, then path elements in order."""
    if not tree:
        return tree
    keys = [k for k in tree if k != DOT]
    if len(keys) > 1:
        keys.sort(key=sort_key)
    out: Tree = {DOT: {}} if DOT in tree else {}
    for k in keys:
        v = tree[k]
        out[k] = canonical(v) if v else v
    return out


def sort_key(pe: str) -> tuple[object, ...]:
    """PathElement order: field names, then keys, then values, then indices."""
    kind = pe[:2]
    if kind == "f:":
        return (0, pe[2:])
    hit = _SORT_KEYS.get(pe)
    if hit is not None:
        return hit
    try:
        if kind == "k:":
            fields = orjson.loads(pe[2:])
            key: tuple[object, ...] = (1, tuple((n, value_key(fields[n])) for n in sorted(fields)))
        elif kind == "v:":
            key = (2, value_key(orjson.loads(pe[2:])))
        elif kind == "i:":
            key = (3, int(pe[2:]))
        else:
            key = (4, pe)
    except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError):
        key = (4, pe)
    if len(_SORT_KEYS) >= _MAX_SORT_KEYS:
        _SORT_KEYS.clear()
    _SORT_KEYS[pe] = key
    return key


def value_key(v: object) -> tuple[object, ...]:
    """SMD's total order of values: numbers, strings, booleans, lists, maps, null."""
    if v is None:
        return (5,)
    if v is True or v is False:
        return (2, v)
    if isinstance(v, int | float):
        return (0, v)
    if isinstance(v, str):
        return (1, v)
    if isinstance(v, list):
        return (3, tuple(value_key(x) for x in v))
    if isinstance(v, dict):
        return (4, tuple((k, value_key(v[k])) for k in sorted(v)))
    return (6, repr(v))


def path_string(path: tuple[str, ...]) -> str:
    """SMD's `Path.String()`: `.spec.containers[name="web"].image`, `[=value]`, `[0]`."""
    out: list[str] = []
    for pe in path:
        kind, body = pe[:2], pe[2:]
        if kind == "f:":
            out.append("." + body)
        elif kind == "k:":
            try:
                fields = orjson.loads(body)
                out.append("[" + ",".join(f"{n}={_go_string(fields[n])}" for n in fields) + "]")
            except (orjson.JSONDecodeError, TypeError):
                out.append("[" + body + "]")
        elif kind == "v:":
            try:
                out.append("[=" + _go_string(orjson.loads(body)) + "]")
            except orjson.JSONDecodeError:
                out.append("[=" + body + "]")
        elif kind == "i:":
            out.append("[" + body + "]")
        else:
            out.append("{{invalid path element}}")
    return "".join(out)


def _go_string(v: object) -> str:
    """`value.ToString`: strings quoted (%q), null, numbers and booleans as Go prints them."""
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, str):
        return orjson.dumps(v).decode()
    if isinstance(v, list):
        return "[" + ",".join(_go_string(x) for x in v) + "]"
    if isinstance(v, dict):
        return "".join(f"{k}={_go_string(x)}" for k, x in v.items())
    return str(v)


def from_paths(*paths: tuple[str, ...]) -> Tree:
    """A set of the given member paths (for constants and tests)."""
    out: Tree = {}
    for path in paths:
        node: Tree = {}
        for pe in reversed(path):
            node = {pe: node}
        out = union(out, node)
    return out
