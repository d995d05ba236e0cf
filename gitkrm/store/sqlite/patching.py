"""patch: apply a JSON, merge or strategic-merge patch to the stored object, then update."""

from __future__ import annotations

from typing import Any

from gitkrm.errors import BadRequest, NotFound, UnsupportedMediaType
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.patch import apply_json_patch, apply_merge_patch, apply_strategic_merge_patch
from gitkrm.schema import patch_meta_for
from gitkrm.store.sqlite.txn import Txn
from gitkrm.store.sqlite.writes import (
    WriteOpts,
    at_version,
    check_preconditions,
    copy_obj,
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
    opts: WriteOpts,
    warnings: list[str],
    *,
    subresource: str | None = None,
) -> Obj:
    kinds = txn.core.kinds
    kind = kinds.of(ref.group, ref.kind)
    version = ref.version or kind.info.version
    gvk = GVK(group=ref.group, version=version, kind=ref.kind)
    kinds.served(gvk)
    if patch_type == "apply":
        raise UnsupportedMediaType(
            "apply patches (server-side apply) are not supported by this store yet"
        )
    if patch_type == "strategic" and kind.custom:
        raise UnsupportedMediaType(_ACCEPTED)
    if subresource == "status" and not kind.has_status:
        raise NotFound(f"the server could not find the requested resource ({kind.resource}/status)")
    ns = (ref.namespace or "default") if kind.namespaced else ""
    stored = txn.load(kind, ns, ref.name)
    doc = copy_obj(at_version(stored.obj, gvk.api_version))
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
