"""Batch ops and the option parsing every write shares."""

from __future__ import annotations

from gitkrm.errors import BadRequest, GitkrmError
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.store.protocol import BatchOp, BatchOpKind, Propagation, WriteOptions
from gitkrm.store.sqlite import deletion, patching, writes
from gitkrm.store.sqlite.txn import Txn


def propagation_policy(p: Propagation | str | None) -> Propagation | None:
    if p is None or isinstance(p, Propagation):
        return p
    try:
        return Propagation(p)
    except ValueError:
        raise BadRequest(
            f'invalid propagationPolicy "{p}": must be Orphan, Background or Foreground'
        ) from None


def describe(op: BatchOp) -> str:
    if op.obj is not None and isinstance(op.obj, dict):
        md = op.obj.get("metadata") or {}
        kind = op.obj.get("kind") or "?"
        name = md.get("name") or md.get("generateName") or "?"
        ns = md.get("namespace")
        return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"
    if op.ref is not None:
        r = op.ref
        return f"{r.kind} {r.namespace}/{r.name}" if r.namespace else f"{r.kind} {r.name}"
    return op.op.value


def prefixed(e: GitkrmError, prefix: str) -> GitkrmError:
    out = type(e)(f"{prefix}: {e.message}", details=e.details)
    out.__cause__ = e
    return out


def served(ref: ObjectRef, obj: Obj) -> Obj:
    """`obj` at the version a ref names (unchanged when it names none)."""
    if ref.version is None:
        return obj
    api_version = GVK(group=ref.group, version=ref.version, kind=ref.kind).api_version
    return writes.at_version(obj, api_version)


def apply_op(t: Txn, op: BatchOp, opts: WriteOptions, out: list[str]) -> Obj:
    """One op of a batch, inside the batch's transaction."""
    kind = op.op
    if kind is BatchOpKind.CREATE and op.obj is not None:  # the common op first
        return writes.create(t, op.obj, opts, out)
    if kind in (BatchOpKind.CREATE, BatchOpKind.UPDATE, BatchOpKind.UPDATE_STATUS):
        if op.obj is None:
            raise BadRequest(f"a {kind.value} op needs an object")
        sub = "status" if kind is BatchOpKind.UPDATE_STATUS else None
        return writes.update(t, op.obj, opts, out, subresource=sub)
    if op.ref is None:
        raise BadRequest(f"a {kind.value} op needs a ref")
    if kind is BatchOpKind.PATCH:
        return patching.patch(t, op.ref, op.patch, op.patch_type, opts, out)
    final = deletion.delete(
        t, op.ref, propagation=propagation_policy(op.propagation), preconditions=op.preconditions
    )
    return served(op.ref, final)
