"""patch: apply a JSON, merge or strategic-merge patch to the stored object, then update;
or server-side apply a configuration (creating the object when it is missing)."""

from __future__ import annotations

from typing import Any

from gitkrm.errors import BadRequest, NotFound, UnsupportedMediaType
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.patch import apply_json_patch, apply_merge_patch, apply_strategic_merge_patch
from gitkrm.schema import patch_meta_for
from gitkrm.store.protocol import WriteOptions
from gitkrm.store.sqlite import managed
from gitkrm.store.sqlite.kinds import Kind
from gitkrm.store.sqlite.txn import Stored, Txn
from gitkrm.store.sqlite.writes import (
    at_version,
    check_preconditions,
    conflict_modified,
    copy_obj,
    create,
    replace,
)

_ACCEPTED = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)


def patch(
    txn: Txn,
    ref: ObjectRef,
    body: Any,
    patch_type: str,
    opts: WriteOptions,
    warnings: list[str],
    *,
    subresource: str | None = None,
) -> Obj:
    kinds = txn.core.kinds
    kind = kinds.of(ref.group, ref.kind)
    version = ref.version or kind.info.version
    gvk = GVK(group=ref.group, version=version, kind=ref.kind)
    kinds.served(gvk)
    if patch_type == "strategic" and kind.custom:
        raise UnsupportedMediaType(_ACCEPTED)
    if subresource == "status" and not kind.has_status:
        raise NotFound(f"the server could not find the requested resource ({kind.resource}/status)")
    ns = (ref.namespace or "default") if kind.namespaced else ""
    if patch_type == "apply":
        return _apply(txn, kind, gvk, ref, ns, body, opts, warnings, subresource)
    stored = txn.load(kind, ns, ref.name)
    # The patch functions change neither input and share untouched subtrees, so the
    # freshly loaded object needs no copy here: copy_obj(patched) below makes it private.
    doc = at_version(stored.obj, gvk.api_version)
    if patch_type == "json":
        if not isinstance(body, list):
            raise BadRequest("a JSON patch must be a list of operations")
        patched = apply_json_patch(doc, body)
    elif patch_type == "merge":
        patched = apply_merge_patch(doc, body)
    elif patch_type == "strategic":
        patched = apply_strategic_merge_patch(
            doc, body, patch_meta_for(gvk, registry=kinds.registry)
        )
    else:
        raise UnsupportedMediaType(_ACCEPTED)
    obj = copy_obj(patched)
    md = obj["metadata"]
    if md.get("name") != ref.name:
        raise BadRequest(
            f"the name of the object ({md.get('name')}) does not match the name on the URL "
            f"({ref.name})"
        )
    if kind.namespaced and md.get("namespace", ns) != ns:
        raise BadRequest(
            f"the namespace of the object ({md.get('namespace')}) does not match the "
            f"namespace on the request ({ns})"
        )
    if obj.get("apiVersion") != gvk.api_version or obj.get("kind") != gvk.kind:
        raise BadRequest("a patch cannot change the apiVersion or kind of an object")
    check_preconditions(kind, ref.name, md, stored)
    return replace(txn, kind, gvk, stored, obj, opts, warnings, subresource=subresource)


def _load_or_none(txn: Txn, kind: Kind, ns: str, name: str) -> Stored | None:
    try:
        return txn.load(kind, ns, name)
    except NotFound:
        return None


def _apply(
    txn: Txn,
    kind: Kind,
    gvk: GVK,
    ref: ObjectRef,
    ns: str,
    body: Any,
    opts: WriteOptions,
    warnings: list[str],
    subresource: str | None,
) -> Obj:
    """Server-side apply: merge the configuration into the live object (or create it),
    the applier owning exactly its configuration's fields."""
    manager = managed.check_apply_options(opts.field_manager)
    config = managed.check_config(
        body, gvk=gvk, name=ref.name, namespace=ns, namespaced=kind.namespaced
    )
    want_rv = (config.get("metadata") or {}).get("resourceVersion")
    part = managed.for_subresource(config, subresource=subresource, has_status=kind.has_status)
    stored = _load_or_none(txn, kind, ns, ref.name)
    if stored is None:
        if subresource is not None:
            txn.load(kind, ns, ref.name)  # raises the API server's NotFound
        obj = copy_obj(
            managed.applied(txn, gvk, live=None, config=part, manager=manager, force=opts.force)
        )
        md = obj["metadata"]
        md.pop("resourceVersion", None)  # a create through update ignores it (storage does)
        if kind.namespaced:
            md["namespace"] = ns
        return create(txn, obj, opts, warnings, applied=True)
    if want_rv and str(want_rv) != stored.obj["metadata"].get("resourceVersion"):
        raise conflict_modified(kind, ref.name)
    live = at_version(stored.obj, gvk.api_version)
    obj = managed.applied(
        txn,
        gvk,
        live=live,
        config=part,
        manager=manager,
        force=opts.force,
        subresource=subresource,
    )
    if obj == live:
        return live  # nothing changed, not even a manager's fields: no new revision
    obj = copy_obj(obj)
    obj["metadata"]["resourceVersion"] = stored.obj["metadata"].get("resourceVersion")
    return replace(
        txn, kind, gvk, stored, obj, opts, warnings, subresource=subresource, applied=True
    )
