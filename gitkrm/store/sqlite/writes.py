"""create, update, update_status and finalize inside one transaction (see txn.Txn)."""

from __future__ import annotations

from typing import Any

import orjson

from gitkrm.errors import AlreadyExists, BadRequest, Cause, Conflict, Forbidden, Invalid, NotFound
from gitkrm.krm import GVK, Obj, join_api_version
from gitkrm.krm.clock import stamp
from gitkrm.krm.nesting import MAX_NESTING, nesting_exceeds
from gitkrm.schema.pod_admission import admit_tolerations
from gitkrm.store.protocol import WriteOptions
from gitkrm.store.sqlite import constraints, managed, policies
from gitkrm.store.sqlite.deletion import delete_if_finalized
from gitkrm.store.sqlite.kinds import Kind
from gitkrm.store.sqlite.meta import (
    generate_name,
    generation_changed,
    new_uid,
    ordered,
)
from gitkrm.store.sqlite.podadmit import admit_pod
from gitkrm.store.sqlite.txn import Stored, Txn

# Server-managed metadata a create cannot set (rest.FillObjectMetaSystemFields).
_CLEARED_ON_CREATE = (
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
# Server-managed metadata an update cannot change (rest.BeforeUpdate).
_KEPT_ON_UPDATE = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def copy_obj(obj: Any) -> Obj:
    """A private deep copy of a request body (admission mutates it in place)."""
    if not isinstance(obj, dict):
        raise BadRequest(f"an object must be a mapping, got {type(obj).__name__}")
    try:
        out = orjson.loads(orjson.dumps(obj))
    except TypeError as e:
        raise BadRequest(f"object is not JSON-serializable: {e}") from None
    if nesting_exceeds(out):
        raise BadRequest(f"object is nested too deeply (more than {MAX_NESTING} levels)")
    md = out.get("metadata")
    if md is None:
        out["metadata"] = {}
    elif not isinstance(md, dict):
        raise BadRequest("metadata must be a mapping")
    return out  # type: ignore[no-any-return]


def conflict_modified(kind: Kind, name: str) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {kind.resource} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )


def resolve(txn: Txn, obj: Obj) -> tuple[GVK, Kind]:
    """The requested GVK (must be served) and the stored kind of an object."""
    return txn.core.kinds.of_type(obj.get("apiVersion"), obj.get("kind"))


def namespace_of(kind: Kind, md: dict[str, Any]) -> str:
    """The object's namespace: `default` when a namespaced object names none; cluster-scoped
    objects lose any namespace they carry (as the API server clears it)."""
    if not kind.namespaced:
        md.pop("namespace", None)
        return ""
    ns = md.get("namespace") or "default"
    if not isinstance(ns, str):
        raise BadRequest("metadata.namespace must be a string")
    md["namespace"] = ns
    return ns


def check_namespace(txn: Txn, ns: str) -> None:
    """Namespaced creates need an existing, non-terminating namespace."""
    core = txn.core
    terminating = core.ns_cache.get(ns)
    if terminating is None:
        row = txn.conn.execute(
            "SELECT data FROM objects WHERE gk = '/Namespace' AND ns = '' AND name = ?", (ns,)
        ).fetchone()
        if row is None:
            raise NotFound(f'namespaces "{ns}" not found')
        terminating = bool((orjson.loads(row[0]).get("metadata") or {}).get("deletionTimestamp"))
        core.ns_cache[ns] = terminating
    if terminating:
        raise Forbidden(
            f"unable to create new content in namespace {ns} because it is being terminated"
        )


def admit(
    txn: Txn, obj: Obj, *, old: Obj | None, opts: WriteOptions, sub: str | None, kind: Kind
) -> list[str]:
    """Schema admission, then the ValidatingAdmissionPolicies that match the write (a Pod
    update first gets the tolerations DefaultTolerationSeconds adds to updates too)."""
    if (
        kind.is_pod
        and old is not None
        and sub is None
        and isinstance(spec := obj.get("spec"), dict)
    ):
        admit_tolerations(spec)
    warnings = txn.core.registry.admit(
        obj, old=old, field_validation=opts.field_validation, subresource=sub
    )
    return warnings + policies.admit(txn, kind, obj, old=old, subresource=sub, dry_run=opts.dry_run)


def at_version(obj: Obj, api_version: str) -> Obj:
    """The object as served at `api_version` (a shallow copy when it differs)."""
    if obj.get("apiVersion") == api_version:
        return obj
    out = dict(obj)
    out["apiVersion"] = api_version
    return out


_GENERATE_NAME_ATTEMPTS = 8


def create(
    txn: Txn, body: Any, opts: WriteOptions, warnings: list[str], *, applied: bool = False
) -> Obj:
    """Create an object; `applied`: the body is the result of an apply patch and carries
    its managedFields already (else the create is recorded as an Update)."""
    obj = copy_obj(body)
    core = txn.core
    gvk, kind = core.kinds.of_type(obj.get("apiVersion"), obj.get("kind"))
    md = obj["metadata"]
    if md.get("resourceVersion"):
        raise BadRequest("resourceVersion should not be set on objects to be created")
    prefix = None if md.get("name") else md.get("generateName")
    if prefix:
        md["name"] = generate_name(str(prefix))
    name = md.get("name")
    if not isinstance(name, str) or not name:
        raise Invalid.for_object(
            kind=kind.kind,
            group=kind.group,
            name="",
            causes=[
                Cause(
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                    "metadata.name",
                )
            ],
        )
    ns = namespace_of(kind, md)
    if prefix:
        # The API server's RetryGenerateName: a generated name that is taken is drawn again,
        # so thousands of pods of one ReplicaSet don't fail on a 5-character collision.
        for _ in range(_GENERATE_NAME_ATTEMPTS):
            if not txn.exists(kind, ns, name):
                break
            name = md["name"] = generate_name(str(prefix))
    for f in _CLEARED_ON_CREATE:
        md.pop(f, None)
    if kind.is_namespace:
        spec = obj.setdefault("spec", {})
        fins = spec.get("finalizers") if isinstance(spec, dict) else None
        if isinstance(spec, dict) and (not isinstance(fins, list) or "kubernetes" not in fins):
            spec["finalizers"] = [*(fins if isinstance(fins, list) else []), "kubernetes"]
        obj["status"] = {"phase": "Active"}
    elif kind.has_status:
        obj.pop("status", None)  # status is written through the status subresource only
    if ns and core.ns_cache.get(ns) is not False:  # False: known, not terminating
        check_namespace(txn, ns)
    uid = md["uid"] = new_uid()  # before admission: a Job's generated selector uses it
    warnings.extend(admit(txn, obj, old=None, opts=opts, sub=None, kind=kind))
    md = obj["metadata"]
    md["uid"] = uid
    md["creationTimestamp"] = stamp(txn.core.options.clock)
    if kind.generation:
        md["generation"] = 1
    if not applied:
        managed.record_update(
            txn,
            gvk,
            old=None,
            new=obj,
            manager=opts.field_manager,
            subresource=None,
            custom=kind.custom,
        )
    if kind.is_pod:
        # The mutating admission plugins run after the field manager recorded the request
        # (create.go), so what they add is nobody's: a later apply does not remove it.
        admit_pod(txn, obj)
    if ns and ns in core.constrained.of(txn) and constraints.admit_create(txn, kind, obj, ns):
        # kube-apiserver validates after the mutating plugins: defaults a LimitRange gave
        # must still make a valid pod (a default request above the container's limit).
        core.registry.admit(obj, old=None, field_validation=opts.field_validation)
    served = obj["apiVersion"]
    obj["apiVersion"] = kind.storage_api_version
    obj = ordered(obj)
    if kind.is_crd:
        if txn.exists(kind, ns, name):
            raise _already(kind, name)
        core.register_crd(txn, obj)
    txn.put(kind, ns, name, obj, old=None)
    return at_version(obj, served)


def _already(kind: Kind, name: str) -> AlreadyExists:
    return AlreadyExists(f'{kind.resource} "{name}" already exists')


def check_preconditions(kind: Kind, name: str, md: dict[str, Any], stored: Stored) -> None:
    """An update's resourceVersion (and uid) must match the stored object's."""
    smd = stored.obj["metadata"]
    want_rv = md.get("resourceVersion")
    if want_rv and str(want_rv) != smd.get("resourceVersion"):
        raise conflict_modified(kind, name)
    uid = md.get("uid")
    if uid and uid != smd.get("uid"):
        raise Conflict(
            f'Operation cannot be fulfilled on {kind.resource} "{name}": Precondition failed: '
            f"UID in precondition: {uid}, UID in object meta: {smd.get('uid')}"
        )


def update(
    txn: Txn,
    body: Any,
    opts: WriteOptions,
    warnings: list[str],
    *,
    subresource: str | None = None,
) -> Obj:
    """Replace an object (or only its status / a namespace's spec.finalizers)."""
    obj = copy_obj(body)
    gvk, kind = resolve(txn, obj)
    md = obj["metadata"]
    name = md.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest("metadata.name is required for an update")
    ns = namespace_of(kind, md)
    if subresource == "status" and not kind.has_status:
        raise NotFound(f"the server could not find the requested resource ({kind.resource}/status)")
    if subresource == "finalize" and not kind.is_namespace:
        raise NotFound(
            f"the server could not find the requested resource ({kind.resource}/finalize)"
        )
    stored = txn.load(kind, ns, name)
    check_preconditions(kind, name, md, stored)
    return replace(txn, kind, gvk, stored, obj, opts, warnings, subresource=subresource)


def replace(
    txn: Txn,
    kind: Kind,
    gvk: GVK,
    stored: Stored,
    obj: Obj,
    opts: WriteOptions,
    warnings: list[str],
    *,
    subresource: str | None,
    applied: bool = False,
) -> Obj:
    """Write `obj` (a private copy at version gvk) over `stored`: the shared tail of update
    and patch (`subresource`: status, finalize, or scale: a write of spec.replicas).
    `applied`: obj is the result of an apply patch and carries its managedFields (else the
    write is recorded as an Update of opts.field_manager)."""
    served = join_api_version(gvk.group, gvk.version)
    old = at_version(stored.obj, served)
    omd = old["metadata"]
    name = omd["name"]
    ns = omd.get("namespace", "")
    if subresource == "status":
        new = dict(old)
        new["metadata"] = dict(omd)
        if "status" in obj:
            new["status"] = obj["status"]
        else:
            new.pop("status", None)
    elif subresource == "finalize":
        new = dict(old)
        new["metadata"] = dict(omd)
        spec = obj.get("spec")
        fins = spec.get("finalizers") if isinstance(spec, dict) else None
        new["spec"] = {**(old.get("spec") or {}), "finalizers": fins or []}
    else:
        new = obj
        md = new["metadata"]
        for f in _KEPT_ON_UPDATE:
            if f in omd:
                md[f] = omd[f]
            else:
                md.pop(f, None)
        if kind.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if kind.is_namespace:
            spec = new.get("spec")
            if not isinstance(spec, dict):
                spec = new["spec"] = {}
            spec["finalizers"] = (old.get("spec") or {}).get("finalizers") or []
            if not spec["finalizers"]:
                del spec["finalizers"]
        _check_new_finalizers(kind, old, new)
    nmd = new["metadata"]
    nmd["resourceVersion"] = omd.get("resourceVersion")
    # A scale write is an update of the object (validated, generation bumped) that only
    # its managedFields entry tells apart.
    main = subresource is None or subresource == "scale"
    warnings.extend(
        admit(txn, new, old=old, opts=opts, sub=None if main else subresource, kind=kind)
    )
    nmd = new["metadata"]
    nmd["resourceVersion"] = omd.get("resourceVersion")
    if kind.generation:
        gen = int(omd.get("generation") or 1)
        if main and generation_changed(old, new, custom=kind.custom):
            gen += 1
        nmd["generation"] = gen
    else:
        nmd.pop("generation", None)
    if applied:
        entries = obj["metadata"].get("managedFields")
        if entries:
            nmd["managedFields"] = entries
        else:
            nmd.pop("managedFields", None)
    else:
        managed.record_update(
            txn,
            gvk,
            old=old,
            new=new,
            manager=opts.field_manager,
            subresource=subresource,
            custom=kind.custom,
        )
    new["apiVersion"] = kind.storage_api_version
    new = ordered(new)
    if new != stored.obj:
        keep_managed_times(new, stored.obj)
    if new == stored.obj:
        # A no-op (keys in another order count as the same: Go serializes structs in one
        # order and sorts maps): no new revision, no event. Dict equality, not bytes: it
        # stops at the first difference and serializes nothing (put serializes once).
        return at_version(stored.obj, served)
    if main and ns and ns in txn.core.constrained.of(txn):
        constraints.admit_update(txn, kind, new, old, ns)
    removed = delete_if_finalized(txn, kind, ns, name, new, stored)
    if removed is not None:
        return at_version(removed, served)
    if kind.is_crd:
        txn.core.register_crd(txn, new)
    txn.put(kind, ns, name, new, old=stored)
    return at_version(new, served)


def keep_managed_times(new: Obj, old: Obj) -> None:
    """The API server's IgnoreManagedFieldsTimestampsTransformer: a write that changes
    nothing but the times of managedFields entries keeps the old entries, so it is a no-op
    (an apply of a list that defaulting completes, as a StatefulSet's volumeClaimTemplates,
    moves its applier's time before defaulting makes the object the live one again)."""
    nmd, omd = new["metadata"], old.get("metadata") or {}
    ne, oe = nmd.get("managedFields"), omd.get("managedFields")
    if not isinstance(ne, list) or not isinstance(oe, list) or len(ne) != len(oe) or ne == oe:
        return
    if len(nmd) != len(omd) or len(new) != len(old):
        return
    if any(k != "managedFields" and omd.get(k, _ABSENT) != v for k, v in nmd.items()):
        return
    if any(k != "metadata" and old.get(k, _ABSENT) != v for k, v in new.items()):
        return
    for n, o in zip(ne, oe, strict=True):
        if n != o and (
            not isinstance(n, dict)
            or not isinstance(o, dict)
            or {k: v for k, v in n.items() if k != "time"}
            != {k: v for k, v in o.items() if k != "time"}
        ):
            return
    nmd["managedFields"] = oe


_ABSENT = object()


def _check_new_finalizers(kind: Kind, old: Obj, new: Obj) -> None:
    omd = old["metadata"]
    if not omd.get("deletionTimestamp"):
        return
    had = set(omd.get("finalizers") or ())
    added = [f for f in new["metadata"].get("finalizers") or () if f not in had]
    if added:
        listed = ", ".join(f'"{f}"' for f in added)
        raise Invalid.for_object(
            kind=kind.kind,
            group=kind.group,
            name=omd["name"],
            causes=[
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: no new finalizers can be added if the object is being "
                    f"deleted, found new finalizers []string{{{listed}}}",
                    "metadata.finalizers",
                )
            ],
        )
