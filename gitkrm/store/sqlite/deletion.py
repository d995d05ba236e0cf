"""Deletion: preconditions, finalizers, propagation policy, namespaces and CRDs.

An object with finalizers is only marked (deletionTimestamp, deletionGracePeriodSeconds 0,
generation bumped) and vanishes in the update that removes its last finalizer. The
propagation policy is recorded as the API server records it for the garbage collector:
Foreground adds `foregroundDeletion`, Orphan adds `orphan`, Background removes both.
A Namespace goes to phase Terminating and vanishes once spec.finalizers (emptied through
the `finalize` subresource) and metadata.finalizers are both empty.
"""

from __future__ import annotations

from typing import Any

import orjson

from gitkrm.errors import Conflict, NotFound
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.krm.clock import stamp
from gitkrm.store.protocol import Preconditions, Propagation
from gitkrm.store.sqlite import policies
from gitkrm.store.sqlite.kinds import Kind, gk_key
from gitkrm.store.sqlite.meta import ordered
from gitkrm.store.sqlite.txn import Stored, Txn

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"


def _precondition_failed(kind: Kind, name: str, what: str, want: str, have: Any) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {kind.resource} "{name}": Precondition failed: '
        f"{what} in precondition: {want}, {what} in object meta: {have}"
    )


def _finalizers_for(policy: Propagation | None, current: list[str]) -> list[str]:
    if policy is None:
        return current
    out = [f for f in current if f not in (ORPHAN, FOREGROUND)]
    if policy is Propagation.ORPHAN:
        out.append(ORPHAN)
    elif policy is Propagation.FOREGROUND:
        out.append(FOREGROUND)
    return out


def _ns_finalizers(obj: Obj) -> list[str]:
    spec = obj.get("spec")
    fins = spec.get("finalizers") if isinstance(spec, dict) else None
    return list(fins) if isinstance(fins, list) else []


def finalized(kind: Kind, obj: Obj) -> bool:
    """No finalizer holds the object any more (for namespaces: spec.finalizers too)."""
    if obj["metadata"].get("finalizers"):
        return False
    return not (kind.is_namespace and _ns_finalizers(obj))


def delete_if_finalized(
    txn: Txn, kind: Kind, ns: str, name: str, new: Obj, stored: Stored
) -> Obj | None:
    """Remove an object being deleted whose update emptied its finalizers (returns the
    final object), else None."""
    if not stored.obj["metadata"].get("deletionTimestamp") or not finalized(kind, new):
        return None
    return remove(txn, kind, ns, name, new, stored)


def remove(txn: Txn, kind: Kind, ns: str, name: str, final: Obj, stored: Stored) -> Obj:
    """Delete the row; a CRD takes its kinds and custom resources with it."""
    final = ordered(final)
    final["apiVersion"] = kind.storage_api_version
    txn.remove(kind, ns, name, final, old=stored)
    if kind.is_crd:
        _remove_custom_resources(txn, final)
        txn.core.unregister_crd(txn, name)
    return final


def _remove_custom_resources(txn: Txn, crd: Obj) -> None:
    spec = crd.get("spec") or {}
    group = spec.get("group") or ""
    cr_kind = (spec.get("names") or {}).get("kind") or ""
    key = gk_key(group, cr_kind)
    try:
        cr = txn.core.kinds.of(group, cr_kind)
    except NotFound:  # its kinds were never registered (NamesAccepted=False)
        return
    if cr.key != key:
        return
    rows = txn.conn.execute(
        "SELECT ns, name, rv, data FROM objects WHERE gk = ? ORDER BY ns, name", (key,)
    ).fetchall()
    for ns, name, rv, data in rows:
        obj = orjson.loads(data)
        txn.remove(cr, ns, name, obj, old=Stored(rv=rv, data=data, obj=obj))


def delete(
    txn: Txn,
    ref: ObjectRef,
    *,
    propagation: Propagation | None,
    preconditions: Preconditions | None,
) -> Obj:
    """Delete (or mark for deletion) one object; returns its final or marked state at the
    stored version (the caller converts it to the requested version)."""
    kind = txn.core.kinds.of(ref.group, ref.kind)
    if ref.version is not None:
        txn.core.kinds.served(GVK(group=ref.group, version=ref.version, kind=ref.kind))
    ns = (ref.namespace or "default") if kind.namespaced else ""
    stored = txn.load(kind, ns, ref.name)
    md = stored.obj["metadata"]
    if preconditions is not None:
        if preconditions.uid is not None and preconditions.uid != md.get("uid"):
            raise _precondition_failed(kind, ref.name, "UID", preconditions.uid, md.get("uid"))
        rv = preconditions.resource_version
        if rv is not None and rv != md.get("resourceVersion"):
            raise _precondition_failed(
                kind, ref.name, "ResourceVersion", rv, md.get("resourceVersion")
            )
    policies.admit(txn, kind, None, old=stored.obj, subresource=None, dry_run=txn.dry_run)
    new = dict(stored.obj)
    nmd = new["metadata"] = dict(md)
    fins = _finalizers_for(propagation, list(md.get("finalizers") or ()))
    if fins:
        nmd["finalizers"] = fins
    else:
        nmd.pop("finalizers", None)
    if kind.is_namespace:
        new["status"] = {**(stored.obj.get("status") or {}), "phase": "Terminating"}
    if finalized(kind, new):
        return remove(txn, kind, ns, ref.name, new, stored)
    if not nmd.get("deletionTimestamp"):
        nmd["deletionTimestamp"] = stamp(txn.core.options.clock)
        if not kind.is_namespace:
            nmd["deletionGracePeriodSeconds"] = 0
        if kind.generation:
            nmd["generation"] = int(nmd.get("generation") or 1) + 1
    if orjson.dumps(new) == stored.data:
        return stored.obj
    txn.put(kind, ns, ref.name, new, old=stored)
    return new
