"""JSON merge patch (RFC 7386 / RFC 7396) and its three-way form for kinds without schema.

Objects merge key by key, `null` deletes, everything else (lists included) replaces.
`create_three_way_json_merge_patch` follows apimachinery's
`CreateThreeWayJSONMergePatch`: additions and changes from live to desired, deletions
from last-applied to desired; lists are atomic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, overload

from gitkrm.errors import Conflict
from gitkrm.patch.values import go_equal

_MISSING: Final = object()


@overload
def apply_merge_patch(doc: object, patch: Mapping[str, object]) -> Mapping[str, object]: ...
@overload
def apply_merge_patch(doc: object, patch: object) -> object: ...
def apply_merge_patch(doc: object, patch: object) -> object:
    """RFC 7396 `MergePatch(doc, patch)`. Inputs are not changed; unchanged subtrees of
    `doc` are shared with the result. A merge patch never looks into values other than
    objects, so they are typed `object`: they are only passed along."""
    if not isinstance(patch, dict):
        return patch
    out: dict[str, object] = dict(doc) if isinstance(doc, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            out[k] = apply_merge_patch(out.get(k), v)
        else:
            out[k] = v
    return out


def create_merge_patch(original: object, modified: object) -> object:
    """The merge patch that turns `original` into `modified` (evanphx `CreateMergePatch`).

    Lists are compared whole. Nulls inside `modified` cannot be expressed by a merge patch
    (null means "delete"). When either side is not an object the patch is `modified`.
    """
    if isinstance(original, dict) and isinstance(modified, dict):
        return _diff(original, modified)
    return modified


def _diff(a: Mapping[str, object], b: Mapping[str, object]) -> dict[str, object]:
    into: dict[str, object] = {}
    for k, bv in b.items():
        av = a.get(k, _MISSING)
        if av is bv:
            continue
        if av is _MISSING:
            into[k] = bv
        elif isinstance(av, dict) and isinstance(bv, dict):
            sub = _diff(av, bv)
            if sub:
                into[k] = sub
        elif not go_equal(av, bv):
            into[k] = bv
    for k in a:
        if k not in b:
            into[k] = None
    return into


def _keep_nulls(m: Mapping[str, object], *, keep: bool) -> dict[str, object]:
    """apimachinery `keepOrDeleteNullInObj`: only the deletions, or everything else."""
    out: dict[str, object] = {}
    for k, v in m.items():
        if v is None:
            if keep:
                out[k] = None
        elif isinstance(v, dict):
            if not v:
                if not keep:
                    out[k] = v
                continue
            sub = _keep_nulls(v, keep=keep)
            if sub:
                out[k] = sub
        elif not keep:
            out[k] = v
    return out


def has_conflicts(left: object, right: object) -> bool:
    """apimachinery `mergepatch.HasConflicts` (JSON merge patch semantics)."""
    if isinstance(left, dict):
        if not isinstance(right, dict):
            return True
        return any(k in right and has_conflicts(v, right[k]) for k, v in left.items())
    if isinstance(left, list):
        if not isinstance(right, list) or len(left) != len(right):
            return True
        return any(has_conflicts(x, y) for x, y in zip(left, right, strict=True))
    return not go_equal(left, right)


def create_three_way_json_merge_patch(
    original: Mapping[str, object] | None,
    modified: Mapping[str, object] | None,
    current: Mapping[str, object] | None,
) -> dict[str, object]:
    """The JSON merge patch that brings `current` to `modified`, given last-applied `original`.

    Raises `Conflict` when the additions and the deletions overlap (they cannot for
    well-formed inputs, as in apimachinery).
    """
    original = original or {}
    modified = modified or {}
    current = current or {}
    add = _keep_nulls(_diff(current, modified), keep=False)
    dels = _keep_nulls(_diff(original, modified), keep=True)
    if has_conflicts(add, dels):
        raise Conflict(
            f"patch:\n{add}\nconflicts with changes made from original to current:\n{dels}"
        )
    result = apply_merge_patch(dels, add)
    assert isinstance(result, dict)
    return result
