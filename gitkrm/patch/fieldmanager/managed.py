"""The two operations of field management: an Update (create, update, non-apply patch)
records what its manager changed; an Apply merges a configuration and makes the
applier's set exactly that configuration's (structured-merge-diff's Updater with
apimachinery's fieldmanager wrappers: stripmeta, managedfieldsupdater, capmanagers,
lastappliedmanager, lastappliedupdater)."""

from __future__ import annotations

from gitkrm.errors import BadRequest
from gitkrm.krm.types import ManagedFieldsEntry, Obj
from gitkrm.patch.fieldmanager import entries as en
from gitkrm.patch.fieldmanager import lastapplied
from gitkrm.patch.fieldmanager.conflicts import conflict_error
from gitkrm.patch.fieldmanager.entries import APPLY, FIELDS_V1, STRIP, UPDATE, Entry, Managers
from gitkrm.patch.fieldmanager.fieldpath import (
    Tree,
    canonical,
    difference,
    intersection,
    union,
)
from gitkrm.patch.fieldmanager.merge import merge, prune
from gitkrm.patch.fieldmanager.shapes import created
from gitkrm.patch.fieldmanager.typed import SchemaType
from gitkrm.patch.fieldmanager.walk import MISSING, SchemaMismatch, compare, field_set


def _entries_of(obj: Obj | None) -> object:
    """metadata.managedFields as it is (a list of entries, unless malformed)."""
    if obj is None:
        return None
    md = obj.get("metadata")
    return md.get("managedFields") if isinstance(md, dict) else None


def _is_reset(req: object) -> bool:
    """isResetManagedFields: an explicit empty list, or a list of one empty entry."""
    return isinstance(req, list) and (not req or (len(req) == 1 and req[0] == {}))


def managed_fields_for_update(
    *,
    old: Obj | None,
    new: Obj,
    manager: str,
    api_version: str,
    subresource: str | None,
    typ: SchemaType,
    now: str,
) -> list[ManagedFieldsEntry]:
    """managedFields for `new` after a create (old None) / update / non-apply patch by
    `manager` (operation Update).

    The base is what the request set in new's metadata.managedFields when it differs from
    old's and decodes (a client may rewrite managedFields, as kubectl's client-side to
    server-side apply migration does), an empty list `[]` or `[{}]` resets, otherwise (absent,
    unchanged, undecodable, or a subresource write) old's. Fields the write changed move to
    `manager`; fields it removed leave every set. When no set changes, old's entries come
    back as they were (timestamps included), so a no-op write stays a no-op.
    """
    old_entries = _entries_of(old)
    md = new.get("metadata")
    req = md.get("managedFields", MISSING) if isinstance(md, dict) else MISSING
    if old is None and (req is MISSING or not req):  # a plain create: the hot path
        try:
            fields = created(typ, new)
        except SchemaMismatch:
            return []
        return [_update_entry(manager, api_version, subresource, now, fields)]
    from_old = True
    managers: Managers | None = None
    if not subresource and req is not MISSING and req is not None and req is not old_entries:
        if _is_reset(req):
            managers, from_old = {}, False
        elif req != old_entries:
            try:
                decoded = en.decode(req)
            except BadRequest:
                decoded = {}
            if decoded:
                managers, from_old = decoded, False
    if managers is None:
        try:
            managers = en.decode(old_entries, trusted=True)
        except BadRequest:
            managers = {}
    try:
        if old is None:
            changed, removed = created(typ, new), {}
        else:
            c = compare(typ, old, new)
            changed = difference(union(c.modified, c.added), STRIP)
            removed = difference(c.removed, STRIP)
    except SchemaMismatch:
        return []  # UpdateNoErrors: managedFields that cannot be computed are dropped
    dirty = not from_old
    if changed or removed:
        for key, e in list(managers.items()):
            s = difference(difference(e.fields, changed), removed)
            if s is e.fields:
                continue
            if not s:
                del managers[key]
                dirty = True
            elif s != e.fields:
                e.set_fields(s)
                dirty = True
    if old is None or changed:
        key = (manager, UPDATE, api_version, subresource or "")
        prev = managers.get(key)
        if prev is not None:
            fields = canonical(union(prev.fields, changed))
        else:
            fields = changed if old is None else canonical(changed)
        managers[key] = Entry(
            manager=manager,
            operation=UPDATE,
            api_version=api_version,
            subresource=subresource or "",
            time=now,
            fields=fields,
        )
        dirty = True
    if en.cap_updates(managers):
        dirty = True
    if not dirty:
        return list(old_entries) if isinstance(old_entries, list) else []
    return en.encode(managers)


def _update_entry(
    manager: str, api_version: str, subresource: str | None, now: str, fields: Tree
) -> ManagedFieldsEntry:
    """Entry.to_wire of a new Update entry, without the Entry."""
    out: ManagedFieldsEntry = {"manager": manager} if manager else {}
    out["operation"] = UPDATE
    if api_version:
        out["apiVersion"] = api_version
    if now:
        out["time"] = now
    out["fieldsType"] = FIELDS_V1
    out["fieldsV1"] = fields
    if subresource:
        out["subresource"] = subresource
    return out


def apply(
    *,
    live: Obj | None,
    config: Obj,
    manager: str,
    api_version: str,
    force: bool,
    typ: SchemaType,
    now: str,
    subresource: str | None = None,
) -> Obj:
    """Server-side apply of `config` (an applied configuration) onto `live` (None: create).

    Returns the new object (a new dict; inputs are not changed) with
    metadata.managedFields set. Raises Conflict (409, one FieldManagerConflict cause per
    field) when the configuration would change a field another manager owns to another
    value, unless `force`; BadRequest when the configuration cannot be typed (a keyed
    list item without its key). A `subresource` apply (status) has its own Apply entry,
    apart from the manager's entry for the main resource (another owner to it).
    """
    managers = en.decode(_entries_of(live), trusted=True)
    live_body = _without_managed_fields(live) if live is not None else {}
    cfg = _without_managed_fields(config)
    key = (manager, APPLY, "", subresource or "")
    last = managers.pop(key, None)
    try:
        config_set = canonical(difference(field_set(typ, cfg), STRIP))
        owned: Tree = config_set
        for e in managers.values():
            owned = union(owned, e.fields)
        merged = merge(typ, live_body, cfg)
        merged = prune(typ, merged, last=last.fields if last else {}, managed=owned)
        assert isinstance(merged, dict)  # the merge of two objects, pruned: an object
        c = compare(typ, live_body, merged)
    except SchemaMismatch as err:
        raise BadRequest(f"failed to create typed patch object: {err}") from None
    changed = difference(union(c.modified, c.added), STRIP)
    removed = difference(c.removed, STRIP)
    conflicts = [(e, s) for e in managers.values() if (s := intersection(e.fields, changed))]
    if conflicts and not force:
        if manager == lastapplied.KUBECTL:
            allowed = lastapplied.allowed_conflicts(typ, live_body)
            conflicts = [(e, d) for e, s in conflicts if (d := difference(s, allowed))]
        if conflicts:
            raise conflict_error(conflicts)
    for k, e in list(managers.items()):
        s = difference(difference(e.fields, changed), removed)
        if s is e.fields:
            continue
        if s:
            e.set_fields(s)
        else:
            del managers[k]
    obj_changed = not c.empty or merged != live_body
    # managedfieldsupdater: the applier's time moves only when the object changed
    time = now if obj_changed else (last.time if last is not None else None)
    if config_set:  # SMD drops a manager whose set is empty (an apply owning nothing)
        managers[key] = Entry(
            manager=manager,
            operation=APPLY,
            api_version=api_version,
            subresource=subresource or "",
            time=time,
            fields=config_set,
        )
    en.cap_updates(managers)
    result = dict(merged)
    rmd = dict(result.get("metadata") or {})
    result["metadata"] = rmd
    wire = en.encode(managers)
    if wire:
        rmd["managedFields"] = wire
    if manager == lastapplied.KUBECTL:
        result = lastapplied.sync_annotation(result, cfg)
    return result


def fields_of(obj: Obj, *, typ: SchemaType) -> Tree:
    """The FieldsV1 of a whole object (SMD ToFieldSet), in canonical order, server-owned
    fields (apiVersion, kind, name, uid, ...) excluded as in an Apply entry."""
    try:
        return canonical(difference(field_set(typ, _without_managed_fields(obj)), STRIP))
    except SchemaMismatch as err:
        raise BadRequest(str(err)) from None


def _without_managed_fields(obj: Obj) -> Obj:
    md = obj.get("metadata")
    if isinstance(md, dict) and "managedFields" in md:
        out = dict(obj)
        out["metadata"] = {k: v for k, v in md.items() if k != "managedFields"}
        return out
    return obj
