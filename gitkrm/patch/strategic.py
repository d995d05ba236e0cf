"""The public strategic-merge-patch functions: apply, two-way and three-way creation.

Three-way (apimachinery `CreateThreeWayMergePatch`): deletions come from last-applied
(`original`) versus desired (`modified`), additions and changes from live (`current`)
versus desired, so fields only others set on the live object survive. With
`overwrite=False` a change that collides with a change made on the live object since the
last apply raises `Conflict` naming the field.

`semantic=True` (the default) treats values that mean the same to Kubernetes as equal
(see `gitkrm.patch.semantic`) and omits directives that change nothing, so re-applying
unchanged manifests to a live object carrying server defaults gives an empty patch;
`semantic=False` reproduces Go's output exactly.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitkrm.errors import Conflict
from gitkrm.krm.types import JSONObject, Obj
from gitkrm.patch.conflicts import find_conflict
from gitkrm.patch.diff import DiffOptions, diff_maps
from gitkrm.patch.directives import APPLY, COMBINE
from gitkrm.patch.failures import BAD_JSON_DOC, PatchFailure
from gitkrm.patch.merge import merge_map
from gitkrm.patch.meta import PatchMeta

_TWO_WAY = DiffOptions(set_element_order=True)
_TWO_WAY_SEMANTIC = DiffOptions(set_element_order=True, semantic=True)
_DELTA = DiffOptions(set_element_order=True, ignore_deletions=True)
_DELTA_SEMANTIC = DiffOptions(set_element_order=True, ignore_deletions=True, semantic=True)
_DELETIONS = DiffOptions(set_element_order=True, ignore_changes=True)
_DELETIONS_SEMANTIC = DiffOptions(set_element_order=True, ignore_changes=True, semantic=True)
_CHANGES = DiffOptions()
_CHANGES_SEMANTIC = DiffOptions(semantic=True)


def _as_map(value: Mapping[str, object] | None) -> JSONObject:
    """Go treats an empty or `null` document as `{}`; anything but an object is invalid.

    The documents are JSON (decoded JSON or YAML) by contract: the engine walks them as
    `JSONValue`s from here on.
    """
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, Mapping):
        return dict(value)  # type: ignore[arg-type]  # JSON by contract
    raise PatchFailure(BAD_JSON_DOC).public()


def apply_strategic_merge_patch(
    doc: Mapping[str, object] | None, patch: Mapping[str, object] | None, meta: PatchMeta
) -> Obj:
    """Apply a strategic merge patch (apimachinery `StrategicMergeMapPatch`).

    Neither input is changed. The result shares unchanged subtrees with `doc` and
    `patch`: copy a subtree before changing it in place. Raises `BadRequest` for a
    malformed patch (`Invalid` for the cases Kubernetes answers with 422).
    """
    try:
        return merge_map(_as_map(doc), _as_map(patch), meta, APPLY)
    except PatchFailure as e:
        raise e.public() from None


def create_two_way_merge_patch(
    original: Mapping[str, object] | None,
    modified: Mapping[str, object] | None,
    meta: PatchMeta,
    *,
    semantic: bool = True,
) -> Obj:
    """The strategic patch that turns `original` into `modified` (`CreateTwoWayMergePatch`)."""
    try:
        return diff_maps(
            _as_map(original), _as_map(modified), meta, _TWO_WAY_SEMANTIC if semantic else _TWO_WAY
        )
    except PatchFailure as e:
        raise e.public() from None


def create_three_way_merge_patch(
    original: Mapping[str, object] | None,
    modified: Mapping[str, object] | None,
    current: Mapping[str, object] | None,
    meta: PatchMeta,
    overwrite: bool = True,
    *,
    semantic: bool = True,
) -> Obj:
    """The strategic patch that brings `current` to `modified`, given last-applied `original`.

    The result shares subtrees with `modified`; treat it as read-only.
    """
    o = _as_map(original)
    m = _as_map(modified)
    c = _as_map(current)
    try:
        delta = diff_maps(c, m, meta, _DELTA_SEMANTIC if semantic else _DELTA)
        # Equal documents have no deletions (a C-speed check that skips a whole walk).
        deletions = (
            {} if o == m else diff_maps(o, m, meta, _DELETIONS_SEMANTIC if semantic else _DELETIONS)
        )
        patch = merge_map(deletions, delta, meta, COMBINE) if deletions or delta else {}
        if not overwrite and patch:
            changed = diff_maps(o, c, meta, _CHANGES_SEMANTIC if semantic else _CHANGES)
            where = find_conflict(patch, changed, meta, semantic=semantic)
            if where is not None:
                raise Conflict(
                    f'conflict on field "{where}": it was changed on the live object since '
                    "the last apply, and the new configuration changes it differently"
                )
    except PatchFailure as e:
        raise e.public() from None
    return patch
