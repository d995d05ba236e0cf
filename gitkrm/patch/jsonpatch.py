"""JSON patch (RFC 6902) with JSON pointers (RFC 6901).

Errors follow the Kubernetes API server: a patch that is not a list of operation objects
is a `BadRequest` (400, the decode step); an operation that cannot be applied (missing
path, failed `test`, moving a value into its own child, bad array index, unknown op) is
`Invalid` (422, `NewGenericServerResponse(StatusUnprocessableEntity, ...)`). Operations
are atomic as a whole: on error nothing is returned, and the input is never changed.

A patch cannot make a document nest deeper than `MAX_NESTING` (gitkrm.krm.nesting), and
its `copy` operations copy at most `MAX_COPIED_VALUES` values in all: each copy of a value
into itself doubles it, so a few dozen operations would otherwise take hours and all the
memory (the API server limits the accumulated size of copies for the same reason).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from gitkrm.errors import BadRequest, Invalid
from gitkrm.krm.nesting import MAX_NESTING
from gitkrm.patch.values import go_equal

_INDEX: Final = re.compile(r"0|[1-9][0-9]*")
_MISSING: Final = object()
MAX_COPIED_VALUES: Final = 100_000


class _OpError(Exception):
    pass


def parse_pointer(pointer: str) -> list[str]:
    """The reference tokens of a JSON pointer (`~1` is `/`, `~0` is `~`)."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise _OpError(f"JSON pointer {pointer!r} must start with '/'")
    tokens = pointer[1:].split("/")
    for t in tokens:
        if "~" in t and re.search(r"~(?![01])", t):
            raise _OpError(f"invalid escape in JSON pointer {pointer!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in tokens]


def _index(token: str, size: int, *, allow_end: bool) -> int:
    if allow_end and token == "-":
        return size
    if not _INDEX.fullmatch(token):
        raise _OpError(f"invalid array index {token!r}")
    i = int(token)
    if i > size or (i == size and not allow_end):
        raise _OpError(f"array index {i} out of bounds (size {size})")
    return i


class _Doc:
    """Copy-on-write editing: containers created here are mutable, shared ones are copied."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.owned: set[int] = set()
        self.copied = 0  # values copied by `copy` operations so far

    def _own(self, value: Any) -> Any:
        if id(value) in self.owned:
            return value
        copy: Any = dict(value) if isinstance(value, dict) else list(value)
        self.owned.add(id(copy))
        return copy

    def get(self, tokens: list[str]) -> Any:
        node = self.root
        for t in tokens:
            if isinstance(node, dict):
                if t not in node:
                    raise _OpError(f"path element {t!r} not found")
                node = node[t]
            elif isinstance(node, list):
                node = node[_index(t, len(node), allow_end=False)]
            else:
                raise _OpError(f"cannot descend into a scalar at {t!r}")
        return node

    def parent(self, tokens: list[str]) -> Any:
        """The (owned, mutable) container holding the last token, copying along the way."""
        if not isinstance(self.root, dict | list):
            raise _OpError("the document root is not a container")
        self.root = self._own(self.root)
        node = self.root
        for t in tokens[:-1]:
            if isinstance(node, dict):
                if t not in node:
                    raise _OpError(f"path element {t!r} not found")
                child = node[t]
                key: Any = t
            elif isinstance(node, list):
                key = _index(t, len(node), allow_end=False)
                child = node[key]
            else:
                raise _OpError(f"cannot descend into a scalar at {t!r}")
            if not isinstance(child, dict | list):
                raise _OpError(f"cannot descend into a scalar at {t!r}")
            child = self._own(child)
            node[key] = child
            node = child
        return node

    def add(self, tokens: list[str], value: Any) -> None:
        if not tokens:
            self.root = value
            return
        node, last = self.parent(tokens), tokens[-1]
        if isinstance(node, dict):
            node[last] = value
        else:
            node.insert(_index(last, len(node), allow_end=True), value)

    def remove(self, tokens: list[str]) -> Any:
        if not tokens:
            raise _OpError("cannot remove the whole document")
        node, last = self.parent(tokens), tokens[-1]
        if isinstance(node, dict):
            if last not in node:
                raise _OpError(f"path element {last!r} not found")
            return node.pop(last)
        return node.pop(_index(last, len(node), allow_end=False))

    def replace(self, tokens: list[str], value: Any) -> None:
        if not tokens:
            self.root = value
            return
        node, last = self.parent(tokens), tokens[-1]
        if isinstance(node, dict):
            if last not in node:
                raise _OpError(f"path element {last!r} not found")
            node[last] = value
        else:
            node[_index(last, len(node), allow_end=False)] = value


def _measure(value: Any) -> tuple[int, int]:
    """(values, nesting levels) of a JSON value, without recursion: it may be deep."""
    if not isinstance(value, dict | list):
        return 1, 0
    count, deepest = 0, 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            stack.extend(
                (c, depth + 1) for c in (node.values() if isinstance(node, dict) else node)
            )
    return count, deepest


def _placed(tokens: list[str], value: Any) -> int:
    """The values in `value`, checking it would not nest too deeply at `tokens`."""
    count, depth = _measure(value)
    if depth and len(tokens) + depth > MAX_NESTING:
        raise _OpError(f"the result would be nested more than {MAX_NESTING} levels deep")
    return count


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def _member(op: dict[str, Any], name: str) -> Any:
    if name not in op:
        raise _OpError(f"missing '{name}' parameter")
    return op[name]


def _pointer(op: dict[str, Any], name: str) -> list[str]:
    value = _member(op, name)
    if not isinstance(value, str):
        raise _OpError(f"'{name}' must be a string")
    return parse_pointer(value)


def _apply_op(doc: _Doc, op: dict[str, Any]) -> None:
    name = op.get("op")
    path = _pointer(op, "path")
    if name == "add":
        value = _member(op, "value")
        _placed(path, value)
        doc.add(path, value)
    elif name == "remove":
        doc.remove(path)
    elif name == "replace":
        value = _member(op, "value")
        _placed(path, value)
        doc.replace(path, value)
    elif name == "move":
        src = _pointer(op, "from")
        if src == path:
            doc.get(src)
            return
        if path[: len(src)] == src:
            raise _OpError("cannot move a value into one of its own children")
        _placed(path, doc.get(src))
        doc.add(path, doc.remove(src))
    elif name == "copy":
        value = doc.get(_pointer(op, "from"))
        doc.copied += _placed(path, value)
        if doc.copied > MAX_COPIED_VALUES:
            raise _OpError(
                f"the copy operations of this patch copy more than {MAX_COPIED_VALUES:,} values"
            )
        doc.add(path, _deep_copy(value))
    elif name == "test":
        expected = _member(op, "value")
        if not go_equal(doc.get(path), expected):
            raise _OpError(f"testing value {op.get('path')} failed")
    else:
        raise _OpError(f"unexpected operation {name!r}")


def apply_json_patch(doc: Any, ops: Sequence[Any]) -> Any:
    """Apply RFC 6902 operations to `doc` and return the new document.

    `doc` is not changed; untouched subtrees are shared with the result.
    """
    if not isinstance(ops, list | tuple):
        raise BadRequest("a JSON patch must be a list of operations")
    if not all(isinstance(op, dict) for op in ops):
        raise BadRequest("each JSON patch operation must be an object")
    state = _Doc(doc)
    for i, op in enumerate(ops):
        try:
            _apply_op(state, op)
        except _OpError as e:
            raise Invalid(
                f"json patch operation {i} ({op.get('op')} {op.get('path')}): {e}"
            ) from None
    return state.root
