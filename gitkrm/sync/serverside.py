"""Server-side apply mode: each desired object is applied whole by the field manager
`gitkrm`, with force (Git is the source of truth, as Flux and Argo CD apply it).

The applied configuration is the desired object with gitkrm's labels and the revision
annotation, and no last-applied annotation: the store's managedFields remember what gitkrm
applied, so fields removed from Git are removed by the apply itself unless another manager
owns them too. Whether an object needs a write is decided without one: the apply is run
locally (`fieldmanager.apply`, with the kind's schema type) and the object is unchanged
when the result is the live object. The revision annotation keeps its live value in that
check, so a commit that does not touch an object does not rewrite it.

An object gitkrm last wrote in client-side mode (an Update entry of manager `gitkrm`, the
last-applied annotation) is first migrated as kubectl's csaupgrade does it: one JSON patch,
guarded by the resourceVersion, turns those fields into gitkrm's Apply entry and drops the
annotation; the apply follows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

import orjson

from gitkrm.errors import BadRequest, Conflict
from gitkrm.krm import GVK, Obj
from gitkrm.krm.clock import now_rfc3339
from gitkrm.patch import PatchMeta, semantically_equal
from gitkrm.patch.fieldmanager import (
    SchemaType,
    apply,
    fields_of,
    managed_fields_for_update,
    parse_fields_v1,
)
from gitkrm.patch.fieldmanager.fieldpath import Tree, canonical, difference, from_paths, union
from gitkrm.sync import keys
from gitkrm.sync.desired import Desired
from gitkrm.sync.patching import MISSING, graft, lookup, mapping_at, pointer_tokens

FIELD_MANAGER: Final = "gitkrm"
APPLY: Final = "Apply"
UPDATE: Final = "Update"

TypeLookup = Callable[[GVK], SchemaType]
# What admission does to an update of a kind that can change the object (None: nothing).
DefaultsLookup = Callable[[GVK], Callable[[Obj], None] | None]

_LAST_APPLIED_PATH: Final = from_paths(("f:metadata", "f:annotations", f"f:{keys.LAST_APPLIED}"))
_REVISION_PATH: Final = from_paths(("f:metadata", "f:annotations", f"f:{keys.REVISION}"))
_LAST_APPLIED_POINTER: Final = "/metadata/annotations/" + keys.LAST_APPLIED.replace("/", "~1")


def apply_config(
    d: Desired,
    *,
    revision: str | None,
    resource_version: str | None = None,
    live: Obj | None = None,
    ignore: Sequence[str] = (),
    keep_ignored: bool = True,
) -> Obj:
    """The applied configuration of `d`: the desired object with the revision annotation
    (none when `revision` is None) and, for an existing object, its resourceVersion as a
    precondition. Fields under the `ignore` pointers take the live value (or are left out
    when the live object has none; always when not `keep_ignored`), so they are neither
    reported nor set back."""
    obj = d.obj
    md = mapping_at(obj, "metadata")
    ann = md.get("annotations")
    if not isinstance(ann, dict):
        ann = {}
    ann.pop(keys.LAST_APPLIED, None)
    if revision is not None:
        ann[keys.REVISION] = revision
    else:
        ann.pop(keys.REVISION, None)
    if ann:
        md["annotations"] = ann
    else:
        md.pop("annotations", None)
    if resource_version:
        md["resourceVersion"] = resource_version
    if live is not None:
        for pointer in ignore:
            tokens = pointer_tokens(pointer)
            obj = graft(obj, tokens, lookup(live, tokens) if keep_ignored else MISSING)
    return obj


def with_resource_version(config: Obj, resource_version: str | None) -> Obj:
    """`config` with another resourceVersion precondition (shallow copies)."""
    md = dict(config.get("metadata") or {})
    if resource_version:
        md["resourceVersion"] = resource_version
    else:
        md.pop("resourceVersion", None)
    return {**config, "metadata": md}


# -- client-side to server-side migration ----------------------------------------------


class Migration(NamedTuple):
    """kubectl csaupgrade's patch for one object, and the object as it leaves it."""

    patch: list[dict[str, Any]]
    live: Obj


def _is_own_entry(e: Any, operation: str) -> bool:
    """A managedFields entry of gitkrm's field manager for `operation` (Update: its
    client-side writes; Apply: its server-side ones) on the object, not a subresource."""
    return (
        isinstance(e, dict)
        and e.get("manager") == FIELD_MANAGER
        and e.get("operation") == operation
        and not e.get("subresource")
    )


def _fields(e: dict[str, Any]) -> Tree:
    try:
        return parse_fields_v1(e.get("fieldsV1") or {})
    except BadRequest:
        return {}


def _annotation_fields(text: Any, typ: SchemaType) -> Tree | None:
    """The fields of a last-applied configuration (None when it can't be read)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        last = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(last, dict):
        return None
    try:
        return fields_of(last, typ=typ)
    except BadRequest:
        return None


def migration(live: Obj, *, typ: SchemaType, api_version: str) -> Migration | None:
    """The csaupgrade of an object gitkrm wrote in client-side mode (None: nothing to do).

    The fields of the last-applied annotation (what gitkrm applied), and the revision
    annotation, become gitkrm's Apply entry (the existing one, or the first Update entry
    turned into one, or a new one); gitkrm's Update entries (main resource) and the
    annotation go. A field removed from Git later is then removed by the apply, as if
    gitkrm had always applied. An annotation another manager owns is left alone. Unlike
    csaupgrade, fields the server defaulted when gitkrm
    created the object (in its Update entry, not in the annotation) are left to nobody,
    as after a create by apply; without a readable annotation, the Update entries'
    fields are taken, as csaupgrade does."""
    md = keys.metadata(live)
    raw = md.get("managedFields")
    entries: list[Any] = raw if isinstance(raw, list) else []
    text = keys.annotations_of(live).get(keys.LAST_APPLIED)
    # An annotation another manager owns (someone's `kubectl apply`) is theirs: neither
    # read as what gitkrm applied nor removed.
    has_annotation = isinstance(text, str) and not _owned_by_others(entries)
    if not has_annotation:
        text = None
    csa = [e for e in entries if _is_own_entry(e, UPDATE)]
    if not csa and not has_annotation:
        return None
    fields = _annotation_fields(text, typ)
    if fields is None:
        fields = {}
        for e in csa:
            fields = union(fields, _fields(e))
        fields = difference(fields, _LAST_APPLIED_PATH)
    elif keys.REVISION in keys.annotations_of(live):
        fields = union(fields, _REVISION_PATH)
    has_apply = any(_is_own_entry(e, APPLY) for e in entries)
    out: list[Any] = []
    placed = has_apply
    for e in entries:
        if _is_own_entry(e, UPDATE):
            if not placed and fields:
                out.append(_apply_entry(e, fields, api_version=api_version))
                placed = True
            continue
        if _is_own_entry(e, APPLY):
            e = {**e, "fieldsV1": canonical(union(_fields(e), fields))}
        out.append(e)
    if not placed and fields:
        out.append(_apply_entry({}, fields, api_version=api_version))
    # As kubectl's UpgradeManagedFieldsPatch: "replace" of the resourceVersion (not "test"),
    # so a concurrent write is a 409 Conflict from storage, not an invalid request.
    patch: list[dict[str, Any]] = [{"op": "add", "path": "/metadata/managedFields", "value": out}]
    rv = md.get("resourceVersion")
    if rv:
        patch.append({"op": "replace", "path": "/metadata/resourceVersion", "value": rv})
    new_md = {k: v for k, v in md.items() if k != "managedFields"}
    if has_annotation:
        patch.append({"op": "remove", "path": _LAST_APPLIED_POINTER})
        new_md["annotations"] = {
            k: v for k, v in keys.annotations_of(live).items() if k != keys.LAST_APPLIED
        }
    new_md["managedFields"] = out
    after: Obj = {**live, "metadata": new_md}
    # What the store records for that write (an Update that only removes a field).
    recorded = managed_fields_for_update(
        old=live,
        new=after,
        manager=FIELD_MANAGER,
        api_version=api_version,
        subresource=None,
        typ=typ,
        now=now_rfc3339(),
    )
    if recorded:
        new_md["managedFields"] = recorded
    else:
        new_md.pop("managedFields", None)
    return Migration(patch, after)


def _owned_by_others(entries: list[Any]) -> bool:
    """Whether a manager other than gitkrm owns the last-applied annotation."""
    for e in entries:
        if isinstance(e, dict) and e.get("manager") != FIELD_MANAGER:
            ann = _fields(e).get("f:metadata", {}).get("f:annotations", {})
            if f"f:{keys.LAST_APPLIED}" in ann:
                return True
    return False


def _apply_entry(base: dict[str, Any], fields: Tree, *, api_version: str) -> dict[str, Any]:
    return {
        "manager": FIELD_MANAGER,
        "operation": APPLY,
        "apiVersion": base.get("apiVersion") or api_version,
        "time": base.get("time") or now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": canonical(fields),
    }


# -- planning --------------------------------------------------------------------------


class Applied(NamedTuple):
    """What applying a desired object to its live one does.

    `config`: the configuration to apply (None: nothing to apply); `after`: the object
    as the apply leaves it (what `gitkrm diff` shows); `migrate`: the client-side to
    server-side migration patch to send first; `force`: the apply takes fields another
    manager owns (a conflict without force)."""

    config: Obj | None
    after: Obj
    migrate: list[dict[str, Any]] | None = None
    force: bool = False


def predict(
    d: Desired,
    live: Obj,
    *,
    typ: SchemaType,
    revision: str,
    ignore: Sequence[str] = (),
    meta: PatchMeta | None = None,
    defaults: DefaultsLookup | None = None,
) -> Applied | None:
    """Apply `d` to `live` locally (None: nothing would change). Raises BadRequest when
    the configuration can't be typed against the kind's schema.

    Ignored fields are applied at their live value (gitkrm keeps owning them), or left out
    of the configuration (another manager that changed them owns them alone): whichever
    changes nothing; for a write, leaving them out unless that would remove them.

    With `meta` (built-in kinds), a result that differs from the live object only in the
    spelling of values the server normalises (`1000m` and `1`) is no change either: the
    apply would be a no-op on a real API server. With `defaults`, so is a result that the
    kind's defaulting turns back into the live object, its managedFields differing only in
    times (kube-apiserver keeps the live object then: IgnoreManagedFieldsTimestamps), as
    `volumeClaimTemplates` applied without the `volumeMode` the server filled in."""
    md = keys.metadata(live)
    mig = migration(live, typ=typ, api_version=d.api_version)
    base = mig.live if mig is not None else live
    current = keys.annotations_of(live).get(keys.REVISION)
    stamp = now_rfc3339()
    chosen: tuple[bool, Obj, bool] | None = None
    for keep in (True, False) if ignore else (True,):
        check = apply_config(
            d,
            revision=current if isinstance(current, str) else None,
            live=live,
            ignore=ignore,
            keep_ignored=keep,
        )
        try:
            after, forced = _apply(base, check, d.api_version, typ, stamp, force=False), False
        except Conflict:
            after, forced = _apply(base, check, d.api_version, typ, stamp, force=True), True
        if (
            after == base
            or (meta is not None and semantically_equal(after, base, meta))
            or (defaults is not None and _defaults_undo(after, base, defaults(d.gvk)))
        ):
            return None if mig is None else Applied(None, base, mig.patch)
        if chosen is None or _body(after) == _body(chosen[1]):
            chosen = (keep, after, forced)
    assert chosen is not None
    keep, after, forced = chosen
    rv = md.get("resourceVersion")
    config = apply_config(
        d,
        revision=revision,
        resource_version=rv if isinstance(rv, str) else None,
        live=live,
        ignore=ignore,
        keep_ignored=keep,
    )
    if keys.annotations_of(after).get(keys.REVISION) != revision:
        after = _apply(base, config, d.api_version, typ, stamp, force=True)
    return Applied(config, after, mig.patch if mig is not None else None, forced)


def _defaults_undo(after: Obj, base: Obj, default: Callable[[Obj], None] | None) -> bool:
    """Whether `default` turns `after` back into `base`, managedFields times aside."""
    if default is None:
        return False
    body = _body(after)
    if body == _body(base):
        defaulted = body
    else:
        defaulted = orjson.loads(orjson.dumps(body))  # a private copy: defaulting writes
        default(defaulted)
        if defaulted != _body(base):
            return False
    return _same_but_times(
        keys.metadata(after).get("managedFields"), keys.metadata(base).get("managedFields")
    )


def _same_but_times(new: Any, old: Any) -> bool:
    if new == old:
        return True
    if not isinstance(new, list) or not isinstance(old, list) or len(new) != len(old):
        return False
    return all(
        isinstance(n, dict)
        and isinstance(o, dict)
        and {k: v for k, v in n.items() if k != "time"}
        == {k: v for k, v in o.items() if k != "time"}
        for n, o in zip(new, old, strict=True)
    )


def _body(obj: Obj) -> Obj:
    """`obj` without its managedFields."""
    md = keys.metadata(obj)
    return {**obj, "metadata": {k: v for k, v in md.items() if k != "managedFields"}}


def _apply(
    live: Obj, config: Obj, api_version: str, typ: SchemaType, stamp: str, *, force: bool
) -> Obj:
    return apply(
        live=live,
        config=config,
        manager=FIELD_MANAGER,
        api_version=api_version,
        force=force,
        typ=typ,
        now=stamp,
    )
