"""Secret redaction for anything gitkrm shows: diffs, notes, status files, logs.

A Secret's `data` and `stringData` values and its last-applied annotation (which holds
the same values) are replaced by stable placeholders. Compared in pairs (a diff), equal
values on both sides read `***` and changed ones `*** (before)` / `*** (after)`, as
kubectl diff masks them, so a diff still shows that a value changed, never the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gitkrm.krm import Obj
from gitkrm.sync import keys

MASK: Final = "***"
BEFORE: Final = "*** (before)"
AFTER: Final = "*** (after)"
_FIELDS: Final = ("data", "stringData")


def is_secret(obj: Mapping[str, Any] | None) -> bool:
    return obj is not None and obj.get("kind") == "Secret" and obj.get("apiVersion") in ("v1", None)


def _with_annotation(obj: Obj, value: str) -> Obj:
    md = dict(keys.metadata(obj))
    ann = dict(md.get("annotations") or {})
    ann[keys.LAST_APPLIED] = value
    md["annotations"] = ann
    out = dict(obj)
    out["metadata"] = md
    return out


def redact(obj: Obj) -> Obj:
    """A copy of `obj` safe to show (unchanged unless it is a Secret)."""
    if not is_secret(obj):
        return obj
    out = dict(obj)
    for f in _FIELDS:
        values = obj.get(f)
        if isinstance(values, dict):
            out[f] = dict.fromkeys(values, MASK)
    if keys.LAST_APPLIED in keys.annotations_of(obj):
        out = _with_annotation(out, MASK)
    return out


def _masked(values: Mapping[str, Any], other: Mapping[str, Any], changed: str) -> dict[str, str]:
    """Each value masked: `changed` where the other side has another value for the key."""
    return {k: changed if k in other and other[k] != v else MASK for k, v in values.items()}


def redact_pair(before: Obj | None, after: Obj | None) -> tuple[Obj | None, Obj | None]:
    """Both sides of a diff, redacted so that changed values stay visible as changed."""
    if not (is_secret(before) or is_secret(after)):
        return before, after
    b = dict(before) if before is not None else None
    a = dict(after) if after is not None else None
    for f in _FIELDS:
        bv = before.get(f) if before is not None else None
        av = after.get(f) if after is not None else None
        bv = bv if isinstance(bv, dict) else None
        av = av if isinstance(av, dict) else None
        if b is not None and bv is not None:
            b[f] = _masked(bv, av or {}, BEFORE)
        if a is not None and av is not None:
            a[f] = _masked(av, bv or {}, AFTER)
    bl = keys.annotations_of(before).get(keys.LAST_APPLIED) if before is not None else None
    al = keys.annotations_of(after).get(keys.LAST_APPLIED) if after is not None else None
    same = bl == al
    if b is not None and bl is not None:
        b = _with_annotation(b, MASK if same or al is None else BEFORE)
    if a is not None and al is not None:
        a = _with_annotation(a, MASK if same or bl is None else AFTER)
    return b, a
