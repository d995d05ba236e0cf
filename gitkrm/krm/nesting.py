"""How deeply an object may nest: one limit for what gitkrm reads and what it stores.

orjson, which writes every object gitkrm stores, serves and sends, refuses values nested
255 levels or deeper, and the store wraps objects in levels of its own (watch events,
lists, and managedFields, whose `fieldsV1` mirrors an object's fields four levels further
down). An object nested deeper than MAX_NESTING is therefore refused where it comes in
(manifest files, request bodies, store writes) with a clear error, instead of failing
halfway through a write.
"""

from __future__ import annotations

from typing import Any, Final

MAX_NESTING: Final = 200


def nesting_exceeds(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether `value` has maps or lists nested more than `limit` levels (the value itself
    is level 1). Iterative: any depth is measured without recursion."""
    if value.__class__ is not dict and value.__class__ is not list:
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > limit:
            return True
        depth += 1
        for child in node.values() if node.__class__ is dict else node:
            cls = child.__class__
            if cls is dict or cls is list:
                push((child, depth))
    return False
