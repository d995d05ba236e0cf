"""The per-object three-way patch: last-applied vs desired vs live.

Strategic merge for built-in kinds, JSON merge for custom resources (as kubectl). The
desired object carries its new last-applied annotation, so a changed manifest also
updates the annotation; the revision annotation is added only to a patch that changes
something anyway. Fields under the source's ignoreDifferences pointers take the live
value on both the desired and the last-applied side, so they are neither reported nor
set back. A resourceVersion precondition makes a concurrent change a Conflict (the
applier re-reads and plans the object again) instead of a silent overwrite.

A patch whose result the API server's defaulting turns back into the live object changes
nothing, and is no patch: a list kubectl replaces whole (a StatefulSet's
`volumeClaimTemplates`) differs from the live one by the defaults the server filled in
(`volumeMode`, `status.phase`), so the three-way patch restates it on every sync. `kubectl
diff` sees no change there (the server's dry-run defaults the result); `diff` and the sync
count such an object unchanged too.

An object last written in server-side mode has no last-applied annotation; its
"original" is then what gitkrm's Apply entry in managedFields owns (the live values of
those fields: what gitkrm applied), so switching back to client-side mode still removes a
field that left Git.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import orjson

from gitkrm.krm import Obj
from gitkrm.patch import (
    PatchMeta,
    apply_strategic_merge_patch,
    create_three_way_json_merge_patch,
    create_three_way_merge_patch,
)
from gitkrm.schema.defaults import defaulter_for
from gitkrm.store import PatchType
from gitkrm.sync import keys
from gitkrm.sync.desired import Desired

MISSING: Final[Any] = object()


def mapping_at(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """`parent[key]` when it is a mapping; otherwise a new empty one put there."""
    child = parent.get(key)
    if not isinstance(child, dict):
        child = parent[key] = {}
    return child


def with_annotations(d: Desired, extra: dict[str, str]) -> Obj:
    """The desired object with annotations added."""
    out = d.obj
    mapping_at(mapping_at(out, "metadata"), "annotations").update(extra)
    return out


def create_body(d: Desired, revision: str) -> Obj:
    return with_annotations(d, {keys.LAST_APPLIED: d.applied, keys.REVISION: revision})


def last_applied(live: Obj) -> Obj | None:
    """The live object's last-applied configuration, or None (absent or unreadable);
    without the annotation, the fields gitkrm's Apply entry owns (see the module doc)."""
    raw = keys.annotations_of(live).get(keys.LAST_APPLIED)
    if not isinstance(raw, str) or not raw:
        return applied_by_gitkrm(live)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def applied_by_gitkrm(live: Obj) -> Obj | None:
    """The part of `live` that gitkrm's server-side Apply entry owns (None: no entry)."""
    entries = keys.metadata(live).get("managedFields")
    if not isinstance(entries, list):
        return None
    for e in entries:
        if (
            isinstance(e, dict)
            and e.get("manager") == keys.MANAGER  # the field manager is named as the label
            and e.get("operation") == "Apply"
            and not e.get("subresource")
            and isinstance(e.get("fieldsV1"), dict)
        ):
            out = extract(live, e["fieldsV1"])
            if not isinstance(out, dict):
                return None
            for k in ("apiVersion", "kind"):
                if k in live:
                    out[k] = live[k]
            md = out.get("metadata")
            ann = md.get("annotations") if isinstance(md, dict) else None
            if isinstance(ann, dict):
                ann.pop(keys.REVISION, None)
            return out
    return None


def extract(value: Any, fields: dict[str, Any]) -> Any:
    """The part of `value` a FieldsV1 set names: `f:` map fields, `k:` list items by key
    (their key fields included), `v:` set items, `i:` items by index; a field whose set
    has no children is taken whole."""
    if not fields or (len(fields) == 1 and "." in fields and not isinstance(value, dict)):
        return value
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for pe, sub in fields.items():
            if pe.startswith("f:") and pe[2:] in value:
                child = value[pe[2:]]
                out[pe[2:]] = extract(child, sub) if isinstance(sub, dict) else child
        return out
    if isinstance(value, list):
        items: list[Any] = []
        for pe, sub in fields.items():
            child = sub if isinstance(sub, dict) else {}
            if pe.startswith("k:"):
                try:
                    key = orjson.loads(pe[2:])
                except orjson.JSONDecodeError:
                    continue
                if not isinstance(key, dict):
                    continue
                for item in value:
                    if isinstance(item, dict) and all(item.get(k) == v for k, v in key.items()):
                        part = extract(item, child)
                        items.append({**key, **part} if isinstance(part, dict) else part)
                        break
            elif pe.startswith("v:"):
                try:
                    v = orjson.loads(pe[2:])
                except orjson.JSONDecodeError:
                    continue
                if v in value:
                    items.append(v)
            elif pe.startswith("i:") and pe[2:].isdigit() and int(pe[2:]) < len(value):
                items.append(extract(value[int(pe[2:])], child))
        return items
    return value


def pointer_tokens(pointer: str) -> list[str]:
    """RFC 6901 reference tokens of a JSON pointer (`~1` is `/`, `~0` is `~`)."""
    if pointer in ("", "/"):
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def lookup(doc: Any, tokens: Sequence[str]) -> Any:
    for t in tokens:
        if isinstance(doc, dict):
            doc = doc.get(t, MISSING)
        elif isinstance(doc, list) and t.isdigit() and int(t) < len(doc):
            doc = doc[int(t)]
        else:
            return MISSING
        if doc is MISSING:
            return MISSING
    return doc


def graft(doc: Any, tokens: Sequence[str], value: Any) -> Any:
    """`doc` with the value at `tokens` replaced by `value` (MISSING: removed), copying
    only along the path; unchanged when the path leads nowhere."""
    if not tokens:
        return value
    head, rest = tokens[0], tokens[1:]
    if isinstance(doc, dict):
        if head not in doc:
            if value is MISSING or rest:
                return doc
            out = dict(doc)
            out[head] = value
            return out
        key: str | int = head
    elif isinstance(doc, list) and head.isdigit() and int(head) < len(doc):
        key = int(head)
    else:
        return doc
    child = graft(doc[key], rest, value)
    if child is doc[key]:
        return doc
    copied: Any = dict(doc) if isinstance(doc, dict) else list(doc)
    if child is MISSING:
        del copied[key]
    else:
        copied[key] = child
    return copied


def _defaults_undo(patch: Obj, live: Obj, *, meta: PatchMeta, d: Desired) -> bool:
    """Whether the built-in defaults of the kind turn `live` patched back into `live`."""
    defaulter = defaulter_for(d.ref.group, d.ref.kind)
    if defaulter is None:
        return False
    # A copy: the patched object shares subtrees with `live` (the watch cache's object).
    patched = orjson.loads(orjson.dumps(apply_strategic_merge_patch(live, patch, meta)))
    defaulter(patched, False)
    return bool(patched == live)


def three_way(
    d: Desired,
    live: Obj,
    *,
    meta: PatchMeta | None,
    ignore: Sequence[str] = (),
    revision: str,
) -> tuple[Obj | None, PatchType]:
    """The patch that brings `live` to `d` (None: nothing to change) and its type.

    `meta` None means a custom resource (JSON merge patch). Raises the patch engine's
    errors (BadRequest) for documents it can't diff.
    """
    original = last_applied(live)
    modified = with_annotations(d, {keys.LAST_APPLIED: d.applied})
    for pointer in ignore:
        tokens = pointer_tokens(pointer)
        value = lookup(live, tokens)
        modified = graft(modified, tokens, value)
        if original is not None:
            original = graft(original, tokens, value)
    patch_type: PatchType
    if meta is not None:
        patch = create_three_way_merge_patch(original, modified, live, meta)
        patch_type = "strategic"
        if patch and _defaults_undo(patch, live, meta=meta, d=d):
            patch = {}
    else:
        patch = create_three_way_json_merge_patch(original, modified, live)
        patch_type = "merge"
    if not patch:
        return None, patch_type
    out = dict(patch)
    md = out.get("metadata")
    md = dict(md) if isinstance(md, dict) else {}
    ann = md.get("annotations")
    ann = dict(ann) if isinstance(ann, dict) else {}
    ann[keys.REVISION] = revision
    md["annotations"] = ann
    rv = keys.metadata(live).get("resourceVersion")
    if rv:
        md["resourceVersion"] = rv
    out["metadata"] = md
    return out, patch_type
