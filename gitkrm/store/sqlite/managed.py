"""managedFields on the store's writes: the glue between writes/patching and the pure
structured-merge-diff logic of gitkrm.patch.fieldmanager.

Every create, update and non-apply patch records an Update entry for its manager (as the
API server's fieldmanager does); an apply patch merges the applied configuration and
records an Apply entry, or fails with a 409 naming the fields other managers own.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from gitkrm.errors import BadRequest, Cause, Invalid
from gitkrm.krm import GVK, Obj
from gitkrm.krm.clock import stamp
from gitkrm.patch.fieldmanager import SchemaType, apply, managed_fields_for_update
from gitkrm.patch.fieldmanager.shapes import is_shared
from gitkrm.schema import ssa_type_for
from gitkrm.store.sqlite.txn import Txn

# The manager of a write that names none and has no User-Agent to take one from (the
# HTTP API passes the User-Agent's prefix, as the API server does).
DEFAULT_MANAGER: Final = "unknown"

# Serialized managedFields of creates of a compiled shape: (its tree, the bytes) by tree,
# manager, apiVersion, time and subresource.
_WIRE: dict[tuple[int, str, str, str, str], tuple[Any, orjson.Fragment]] = {}
_MAX_WIRE: Final = 256


_BUILTIN: dict[tuple[str, str, str], SchemaType] = {}


def type_of(txn: Txn, gvk: GVK, *, custom: bool = True) -> SchemaType:
    """The typed view of a kind at the requested version (cached by the schema layer; a
    built-in kind's also here, by plain strings: a GVK hashes in Python code)."""
    if custom:
        return ssa_type_for(gvk, registry=txn.core.registry)
    key = (gvk.group, gvk.version, gvk.kind)
    typ = _BUILTIN.get(key)
    if typ is None:
        typ = _BUILTIN[key] = ssa_type_for(gvk, registry=txn.core.registry)
    return typ


def record_update(
    txn: Txn,
    gvk: GVK,
    *,
    old: Obj | None,
    new: Obj,
    manager: str | None,
    subresource: str | None,
    custom: bool = True,
) -> None:
    """Set new's managedFields after a create (old None), update or non-apply patch
    (`custom`: the kind may be a custom resource's)."""
    manager = manager or DEFAULT_MANAGER
    api_version = gvk.api_version
    now = stamp(txn.core.options.clock)
    entries = managed_fields_for_update(
        old=old,
        new=new,
        manager=manager,
        api_version=api_version,
        subresource=subresource,
        typ=type_of(txn, gvk, custom=custom),
        now=now,
    )
    md = new["metadata"]
    if not entries:
        md.pop("managedFields", None)
        return
    md["managedFields"] = entries
    tree = entries[0].get("fieldsV1") if old is None and len(entries) == 1 else None
    if tree is not None and is_shared(tree):
        # A create of a compiled shape: its entry is serialized once per manager, version
        # and second, and put() splices those bytes in (serializing the nested FieldsV1
        # dicts was half of a W10k Deployment's serialization).
        key = (id(tree), manager, api_version, now, subresource or "")
        hit = _WIRE.get(key)
        if hit is None or hit[0] is not tree:
            hit = (tree, orjson.Fragment(orjson.dumps(entries)))
            if len(_WIRE) >= _MAX_WIRE:
                _WIRE.clear()
            _WIRE[key] = hit
        txn.wire_fields = (entries, hit[1])


def patch_options_invalid(field: str, message: str, reason: str) -> Invalid:
    """A PatchOptions error (422), as ValidatePatchOptions reports it."""
    return Invalid.for_object(
        kind="PatchOptions", group="meta.k8s.io", name="", causes=[Cause(reason, message, field)]
    )


def check_apply_options(manager: str | None) -> str:
    if not manager:
        raise patch_options_invalid(
            "fieldManager", "Required value: is required for apply patch", "FieldValueRequired"
        )
    return manager


def check_config(
    body: Any, *, gvk: GVK, name: str, namespace: str, namespaced: bool
) -> dict[str, Any]:
    """An applied configuration, checked against the request as the API server checks it
    (version, kind, name, namespace; no managedFields)."""
    if not isinstance(body, dict):
        raise BadRequest(f"an apply patch must be an object, got {type(body).__name__}")
    av = body.get("apiVersion")
    if av != gvk.api_version:
        raise BadRequest(
            "Incorrect version specified in apply patch. "
            f"Specified patch version: {av or ''}, expected: {gvk.api_version}"
        )
    kind = body.get("kind")
    if kind != gvk.kind:
        raise BadRequest(
            f"the kind in the apply patch ({kind or ''}) does not match the kind of the "
            f"resource ({gvk.kind})"
        )
    md = body.get("metadata")
    if md is None:
        md = {}
    elif not isinstance(md, dict):
        raise BadRequest("metadata must be an object")
    if md.get("managedFields") is not None:
        raise BadRequest("metadata.managedFields must be nil")
    body_name = md.get("name") or ""
    if body_name != name:
        raise BadRequest(
            f"the name of the object ({body_name}) does not match the name on the URL ({name})"
        )
    if namespaced:
        body_ns = md.get("namespace")
        if body_ns not in (None, "", namespace):
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
    return body


def for_subresource(config: dict[str, Any], *, subresource: str | None, has_status: bool) -> Obj:
    """The part of a configuration the request may set (the strategies' reset fields): a
    status apply only its status, an apply of an object with a status subresource all but
    its status. Shallow: the config itself is not changed."""
    if subresource == "status":
        out: Obj = {k: config[k] for k in ("apiVersion", "kind") if k in config}
        md = config.get("metadata") or {}
        out["metadata"] = {k: md[k] for k in ("name", "namespace") if k in md}
        if "status" in config:
            out["status"] = config["status"]
        return out
    if has_status and "status" in config:
        return {k: v for k, v in config.items() if k != "status"}
    return config


def applied(
    txn: Txn,
    gvk: GVK,
    *,
    live: Obj | None,
    config: Obj,
    manager: str,
    force: bool,
    subresource: str | None = None,
) -> Obj:
    """The object after applying `config` onto `live` (None: a create), managedFields set;
    a `subresource` apply records its entry with that subresource."""
    return apply(
        live=live,
        config=config,
        manager=manager,
        api_version=gvk.api_version,
        force=force,
        typ=type_of(txn, gvk),
        now=stamp(txn.core.options.clock),
        subresource=subresource,
    )
