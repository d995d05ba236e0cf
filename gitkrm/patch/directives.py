"""Strategic-merge-patch directives, and patch values turned into plain data.

The directive keys (`$patch`, `$retainKeys`, `$setElementOrder/<f>`,
`$deleteFromPrimitiveList/<f>`) and the options apimachinery merges with: applying a
patch (`APPLY`) or combining the two halves of a three-way patch (`COMBINE`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, overload

from gitkrm.krm.types import JSONObject, JSONValue
from gitkrm.patch.failures import BAD_PRIMITIVE_LIST, BAD_SET_ORDER, PatchFailure
from gitkrm.patch.order import DELETE, DIRECTIVE

REPLACE: Final = "replace"
MERGE: Final = "merge"
RETAIN_KEYS: Final = "$retainKeys"
DELETE_PREFIX: Final = "$deleteFromPrimitiveList"
ORDER_PREFIX: Final = "$setElementOrder"


@dataclass(frozen=True, slots=True)
class MergeOptions:
    parallel: bool
    """Execute `$deleteFromPrimitiveList` / `$setElementOrder` (apply) or carry them."""
    drop_nulls: bool
    """Drop nulls that match nothing (apply) or keep them as deletions (combine)."""


APPLY: Final = MergeOptions(parallel=True, drop_nulls=True)
COMBINE: Final = MergeOptions(parallel=False, drop_nulls=False)


def extract_key(key: str, prefix: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise PatchFailure(BAD_PRIMITIVE_LIST if prefix == DELETE_PREFIX else BAD_SET_ORDER)
    return rest


@overload
def materialize(value: list[JSONValue], *, drop_nulls: bool) -> tuple[list[JSONValue], bool]: ...
@overload
def materialize(value: JSONValue, *, drop_nulls: bool) -> tuple[JSONValue, bool]: ...
def materialize(value: JSONValue, *, drop_nulls: bool) -> tuple[JSONValue, bool]:
    """A patch value used as data where there is nothing to merge it with.

    apimachinery's `discardNullValuesFromPatch` (when applying) then `removeDirectives`:
    maps carrying `$patch` vanish. When applying (`drop_nulls`), the parallel-list
    directives (`$setElementOrder/...`, `$deleteFromPrimitiveList/...`, `$retainKeys`)
    are dropped too: with nothing to order, delete from or clear they mean nothing, and
    the API server drops them when it decodes the typed object. Returns (value, keep);
    `value` itself is returned when nothing changes.
    """
    if isinstance(value, dict):
        if DIRECTIVE in value and not (drop_nulls and value[DIRECTIVE] is None):
            return None, False
        out: JSONObject | None = None
        for k, v in value.items():
            if (v is None and drop_nulls) or (
                drop_nulls and k[:1] == "$" and _is_list_directive(k)
            ):
                out = out if out is not None else _copy_upto(value, k)
                continue
            if isinstance(v, dict | list):
                nv, keep = materialize(v, drop_nulls=drop_nulls)
                if nv is not v or not keep:
                    out = out if out is not None else _copy_upto(value, k)
                    if keep:
                        out[k] = nv
                    continue
            if out is not None:
                out[k] = v
        return (value if out is None else out), True
    if isinstance(value, list):
        items: list[JSONValue] | None = None
        for i, v in enumerate(value):
            if isinstance(v, dict | list):
                nv, keep = materialize(v, drop_nulls=drop_nulls)
                if nv is not v or not keep:
                    items = items if items is not None else list(value[:i])
                    if keep:
                        items.append(nv)
                    continue
            if items is not None:
                items.append(v)
        return (value if items is None else items), True
    return value, True


def _is_list_directive(key: str) -> bool:
    return key == RETAIN_KEYS or key.startswith((ORDER_PREFIX, DELETE_PREFIX))


def _copy_upto(m: JSONObject, stop: str) -> JSONObject:
    out: JSONObject = {}
    for k, v in m.items():
        if k == stop:
            break
        out[k] = v
    return out


__all__ = [
    "APPLY",
    "COMBINE",
    "DELETE",
    "DELETE_PREFIX",
    "DIRECTIVE",
    "MERGE",
    "ORDER_PREFIX",
    "REPLACE",
    "RETAIN_KEYS",
    "MergeOptions",
    "extract_key",
    "materialize",
]
