"""Writer: every controller write goes through here.

Group commit: writes submitted while the event loop runs one round are committed together in
one `store.batch` (one transaction), which is what makes thousands of pods affordable; when a
batch fails (one conflicting write aborts it all) each write is retried alone, so every
caller gets its own result or error. What a write returns is recorded in the informer of
its kind at once (see informer.py: read your writes).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from gitkrm.cache.watchcache import Holder
from gitkrm.controllers.objects import with_status
from gitkrm.errors import GitkrmError, NotFound
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.store.protocol import (
    BatchOp,
    BatchOpKind,
    PatchType,
    Preconditions,
    Propagation,
    Store,
)

log = logging.getLogger(__name__)

MAX_BATCH = 500
MAX_ROUNDS = 16  # event-loop rounds a write may wait for others to join its commit
FIELD_MANAGER = "gitkrm-controllers"


def ref_of(obj: Obj) -> ObjectRef:
    md = obj["metadata"]
    gvk = GVK.of(obj)
    return ObjectRef(
        group=gvk.group,
        kind=gvk.kind,
        name=md["name"],
        namespace=md.get("namespace") or None,
        version=gvk.version,
    )


def still_exists(obj: Obj) -> bool:
    """Whether a delete left the object in place (finalizers hold it)."""
    if obj["metadata"].get("finalizers"):
        return True
    spec = obj.get("spec")
    return (
        obj.get("kind") == "Namespace" and isinstance(spec, dict) and bool(spec.get("finalizers"))
    )


class Writer:
    def __init__(self, store: Store, informers: Holder) -> None:
        self.store = store
        self.informers = informers
        self._pending: list[tuple[BatchOp, asyncio.Future[Obj]]] = []
        self._scheduled = False
        self._inflight: set[asyncio.Task[None]] = set()
        self._seen = 0
        self._rounds = 0
        self.writes = 0
        self.batches = 0
        self.counts: dict[tuple[str, str], int] = {}  # (kind, op) -> writes

    # -- the writes ------------------------------------------------------------------------

    async def create(self, obj: Obj) -> Obj:
        return await self._submit(BatchOp(op=BatchOpKind.CREATE, obj=obj))

    async def update(self, obj: Obj) -> Obj:
        return await self._submit(BatchOp(op=BatchOpKind.UPDATE, obj=obj))

    async def update_status(self, obj: Obj) -> Obj:
        return await self._submit(BatchOp(op=BatchOpKind.UPDATE_STATUS, obj=obj))

    async def set_status(self, obj: Obj, status: Mapping[str, object]) -> bool:
        """update_status of `obj` to `status` unless that is its status already; False when
        `obj` is gone."""
        if status == (obj.get("status") or {}):
            return True
        try:
            await self.update_status(with_status(obj, status))
        except NotFound:
            return False
        return True

    async def patch(self, ref: ObjectRef, patch: object, patch_type: PatchType = "merge") -> Obj:
        return await self._submit(
            BatchOp(op=BatchOpKind.PATCH, ref=ref, patch=patch, patch_type=patch_type)
        )

    async def delete(
        self,
        ref: ObjectRef,
        *,
        propagation: Propagation | None = None,
        preconditions: Preconditions | None = None,
    ) -> Obj:
        return await self._submit(
            BatchOp(
                op=BatchOpKind.DELETE,
                ref=ref,
                propagation=propagation,
                preconditions=preconditions,
            )
        )

    async def finalize_namespace(self, finalizer: Any, ns: Obj) -> Obj:
        """PUT namespaces/<name>/finalize on a store that has it (not batched)."""
        result: Obj = await finalizer.finalize_namespace(ns, field_manager=FIELD_MANAGER)
        self.record(result, deleted=not still_exists(result))
        return result

    def record(self, result: Obj, *, deleted: bool = False) -> None:
        """Tell the informer of the object's kind what a write returned."""
        try:
            inf = self.informers.for_object(result)
            if inf is not None:
                if deleted:
                    inf.observe_deleted(result)
                else:
                    inf.observe(result)
        except Exception:
            log.exception("recording a written %s failed", result.get("kind"))

    # -- group commit ----------------------------------------------------------------------

    def _submit(self, op: BatchOp) -> asyncio.Future[Obj]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Obj] = loop.create_future()
        self._pending.append((op, fut))
        if not self._scheduled:
            self._scheduled = True
            self._seen = 0
            self._rounds = 0
            loop.call_soon(self._flush)
        return fut

    def _flush(self) -> None:
        """Commit what is pending, once a round of the event loop added nothing more (the
        callers are all waiting for their results) or enough has gathered."""
        n = len(self._pending)
        if n > self._seen and n < MAX_BATCH and self._rounds < MAX_ROUNDS:
            self._seen = n
            self._rounds += 1
            asyncio.get_running_loop().call_soon(self._flush)
            return
        self._scheduled = False
        pending, self._pending = self._pending, []
        for start in range(0, len(pending), MAX_BATCH):
            chunk = pending[start : start + MAX_BATCH]
            task = asyncio.ensure_future(self._commit(chunk))
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)

    async def drain(self) -> None:
        """Until every submitted write is committed (or failed)."""
        while self._pending or self._inflight or self._scheduled:
            if self._inflight:
                await asyncio.gather(*self._inflight, return_exceptions=True)
            else:
                await asyncio.sleep(0)

    async def _commit(self, chunk: Sequence[tuple[BatchOp, asyncio.Future[Obj]]]) -> None:
        if len(chunk) > 1:
            try:
                results = await self.store.batch(
                    [op for op, _ in chunk], field_manager=FIELD_MANAGER
                )
            except GitkrmError:
                pass  # one of them failed: run each alone, each caller gets its own answer
            else:
                self.batches += 1
                for (op, fut), result in zip(chunk, results, strict=True):
                    self._resolve(op, fut, result)
                return
        for op, fut in chunk:
            try:
                result = await self._one(op)
            except Exception as e:  # handed to the caller
                if not fut.done():
                    fut.set_exception(e)
            else:
                self._resolve(op, fut, result)

    async def _one(self, op: BatchOp) -> Obj:
        store = self.store
        kind = op.op
        if kind is BatchOpKind.CREATE:
            assert op.obj is not None
            return await store.create(op.obj, field_manager=FIELD_MANAGER)
        if kind is BatchOpKind.UPDATE:
            assert op.obj is not None
            return await store.update(op.obj, field_manager=FIELD_MANAGER)
        if kind is BatchOpKind.UPDATE_STATUS:
            assert op.obj is not None
            return await store.update_status(op.obj, field_manager=FIELD_MANAGER)
        assert op.ref is not None
        if kind is BatchOpKind.PATCH:
            return await store.patch(op.ref, op.patch, op.patch_type, field_manager=FIELD_MANAGER)
        return await store.delete(
            op.ref, propagation=op.propagation, preconditions=op.preconditions
        )

    def _resolve(self, op: BatchOp, fut: asyncio.Future[Obj], result: Obj) -> None:
        self.writes += 1
        ck = (str(result.get("kind")), op.op.value)
        self.counts[ck] = self.counts.get(ck, 0) + 1
        self.record(result, deleted=op.op is BatchOpKind.DELETE and not still_exists(result))
        if not fut.done():
            fut.set_result(result)
