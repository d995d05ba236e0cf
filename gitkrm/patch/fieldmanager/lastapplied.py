"""kubectl's client-side apply annotation meets server-side apply (lastappliedmanager.go
and lastappliedupdater.go): the first `kubectl apply --server-side` after client-side
applies may take the fields the annotation shows it applied without a conflict, and
while the annotation exists kubectl's server-side applies keep it up to date."""

from __future__ import annotations

from typing import Final

import orjson

from gitkrm.krm.types import Obj
from gitkrm.patch.fieldmanager.fieldpath import Tree, difference
from gitkrm.patch.fieldmanager.fieldsv1 import go_json
from gitkrm.patch.fieldmanager.typed import SchemaType
from gitkrm.patch.fieldmanager.walk import SchemaMismatch, compare, field_set

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
KUBECTL: Final = "kubectl"


def _annotation(obj: object) -> str | None:
    md = obj.get("metadata") if isinstance(obj, dict) else None
    ann = md.get("annotations") if isinstance(md, dict) else None
    value = ann.get(LAST_APPLIED) if isinstance(ann, dict) else None
    return value if isinstance(value, str) and value else None


def allowed_conflicts(typ: SchemaType, live: object) -> Tree:
    """The fields the last-applied annotation of `live` shows as applied and that still
    hold the applied value: kubectl owns them in spirit, so they don't conflict."""
    text = _annotation(live)
    if text is None:
        return {}
    try:
        last = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(last, dict):
        return {}
    try:
        owned = field_set(typ, last)
        c = compare(typ, last, live)
    except SchemaMismatch:
        return {}
    return difference(difference(difference(owned, c.modified), c.added), c.removed)


def sync_annotation(result: Obj, config: Obj) -> Obj:
    """`result` with its last-applied annotation set to `config` (when it has one)."""
    if _annotation(result) is None:
        return result
    cfg = dict(config)
    md = dict(cfg.get("metadata") or {})
    ann = dict(md.get("annotations") or {})
    ann.pop(LAST_APPLIED, None)
    if ann:
        md["annotations"] = ann
    else:
        md.pop("annotations", None)
    cfg["metadata"] = md
    out = dict(result)
    rmd = dict(out["metadata"])
    rmd["annotations"] = {**rmd["annotations"], LAST_APPLIED: go_json(cfg) + "\n"}
    out["metadata"] = rmd
    return out
