"""SqliteStore: the embedded implementation of the Store protocol (docs/architecture.md).

All SQLite work runs on the event loop's thread, one statement sequence at a time: a write
is a synchronous BEGIN IMMEDIATE ... COMMIT inside its coroutine, so transactions never
interleave, and the coroutine returns (acknowledges) only after COMMIT.

Warnings: every write takes `warnings: list[str] | None`; admission warnings (unknown
fields under fieldValidation=Warn) are appended to it.
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar, Unpack

from gitkrm.errors import BadRequest, GitkrmError, ServiceUnavailable
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.krm.clock import WALL, Clock
from gitkrm.schema import Registry
from gitkrm.store.protocol import (
    BatchOp,
    DeleteKeywords,
    ListKeywords,
    PatchType,
    WatchEvent,
    WatchKeywords,
    WriteKeywords,
    WriteOptions,
)
from gitkrm.store.sqlite import db, deletion, expiry, managed, patching, reads, writes
from gitkrm.store.sqlite.batching import (
    apply_op,
    describe,
    prefixed,
    propagation_policy,
    served,
)
from gitkrm.store.sqlite.core import (
    BOOKMARK_INTERVAL,
    HISTORY_LIMIT,
    POLL_INTERVAL,
    WATCH_QUEUE_SIZE,
    Core,
    Options,
    gc_paused,
)
from gitkrm.store.sqlite.kinds import NAMESPACE_GK
from gitkrm.store.sqlite.txn import Txn
from gitkrm.store.sqlite.watch import WatchSpec, too_old, watch_events

T = TypeVar("T")
INITIAL_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
# The initial namespaces are the API server's own writes (their managedFields say so).
_SYSTEM = WriteOptions(field_manager="kube-apiserver")


class SqliteStore:
    """The embedded store. Open it with `gitkrm.store.open_store("sqlite:///...")`."""

    def __init__(self, core: Core, lock: db.WriterLock | None) -> None:
        self._core = core
        self._lock = lock

    # -- opening and closing ---------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str,
        *,
        read_only: bool = False,
        registry: Registry | None = None,
        history_limit: int = HISTORY_LIMIT,
        watch_queue_size: int = WATCH_QUEUE_SIZE,
        bookmark_interval: float = BOOKMARK_INTERVAL,
        poll_interval: float = POLL_INTERVAL,
        clock: Clock = WALL,
    ) -> SqliteStore:
        if history_limit < 1 or watch_queue_size < 1:
            raise BadRequest("history_limit and watch_queue_size must be positive")
        lock = None
        if not read_only and path != ":memory:":
            lock = db.WriterLock.acquire(path)
        try:
            conn = db.connect(path, read_only=read_only)
            try:
                core = Core(
                    conn=conn,
                    registry=registry if registry is not None else Registry.builtin(),
                    read_only=read_only,
                    path=path,
                    options=Options(
                        history_limit=history_limit,
                        watch_queue_size=watch_queue_size,
                        bookmark_interval=bookmark_interval,
                        poll_interval=poll_interval,
                        clock=clock,
                    ),
                )
                core.register_stored_crds()
            except sqlite3.OperationalError as e:
                conn.close()
                if read_only and "no such table" in str(e):
                    # The writer is still creating the schema (a reader opened a new store).
                    raise ServiceUnavailable(
                        f"store {path} is being initialized by its writer; try again"
                    ) from e
                raise
            store = cls(core, lock)
            if not read_only and core.rv == 0:
                store._create_initial_namespaces()
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        return store

    def _create_initial_namespaces(self) -> None:
        def run(txn: Txn) -> None:
            for name in INITIAL_NAMESPACES:
                body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                writes.create(txn, body, _SYSTEM, [])

        self._core.write(run, dry_run=False)

    async def close(self) -> None:
        core = self._core
        if core.closed:
            return
        core.closed = True
        core.hub.close_all()
        if core.checkpointer is not None:
            core.checkpointer.stop()
        core.conn.close()
        if self._lock is not None:
            self._lock.release()

    async def __aenter__(self) -> SqliteStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- accessors -------------------------------------------------------------------------

    @property
    def registry(self) -> Registry:
        return self._core.registry

    @property
    def path(self) -> str:
        return self._core.path

    @property
    def read_only(self) -> bool:
        return self._core.read_only

    @property
    def resource_version(self) -> int:
        """The latest committed revision."""
        return self._core.current_rv()

    @property
    def compacted_revision(self) -> int:
        return self._core.current_compact_rv()

    def compact(self, upto: int | None = None) -> None:
        """Forget history up to `upto` now (default: keep the last history_limit revisions)."""
        self._core.check_writable()
        self._core.compact_now(upto)

    @property
    def watcher_count(self) -> int:
        return self._core.hub.watchers()

    # -- reads -----------------------------------------------------------------------------

    async def get(self, ref: ObjectRef) -> Obj:
        return reads.get(self._core, ref)

    async def list(
        self, gvk: GVK, namespace: str | None = None, **options: Unpack[ListKeywords]
    ) -> Obj:
        return reads.as_dict(*reads.page(self._core, gvk, namespace, options))

    async def list_raw(
        self, gvk: GVK, namespace: str | None = None, **options: Unpack[ListKeywords]
    ) -> bytes:
        """`list`, serialized: the Kubernetes list JSON body, spliced from stored bytes."""
        return reads.as_bytes(*reads.page(self._core, gvk, namespace, options))

    # -- writes ----------------------------------------------------------------------------

    async def create(
        self,
        obj: Obj,
        *,
        warnings: builtins.list[str] | None = None,
        **options: Unpack[WriteKeywords],
    ) -> Obj:
        return self._write(lambda t, opts, out: writes.create(t, obj, opts, out), warnings, options)

    async def update(
        self,
        obj: Obj,
        *,
        warnings: builtins.list[str] | None = None,
        **options: Unpack[WriteKeywords],
    ) -> Obj:
        return self._write(lambda t, opts, out: writes.update(t, obj, opts, out), warnings, options)

    async def update_status(
        self,
        obj: Obj,
        *,
        warnings: builtins.list[str] | None = None,
        **options: Unpack[WriteKeywords],
    ) -> Obj:
        return self._write(
            lambda t, opts, out: writes.update(t, obj, opts, out, subresource="status"),
            warnings,
            options,
        )

    async def finalize_namespace(
        self,
        obj: Obj,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> Obj:
        """PUT namespaces/<name>/finalize: set only spec.finalizers. A terminating namespace
        whose spec.finalizers and metadata.finalizers are then empty is removed."""
        if not isinstance(obj, dict) or obj.get("kind") != NAMESPACE_GK.kind:
            raise BadRequest("finalize takes a Namespace object")
        opts = WriteOptions(field_manager=field_manager)
        return self._core.write(
            lambda t: writes.update(t, obj, opts, [], subresource="finalize"), dry_run=dry_run
        )

    async def patch(
        self,
        ref: ObjectRef,
        patch: Any,
        patch_type: PatchType,
        *,
        warnings: builtins.list[str] | None = None,
        subresource: str | None = None,
        **options: Unpack[WriteKeywords],
    ) -> Obj:
        """Patch an object (`subresource="status"`: only its status). An "apply" patch is
        server-side apply: `field_manager` is required, `force` takes over conflicting
        fields (force is refused on other patch types, as PatchOptions validation does)."""
        opts = WriteOptions.of(**options)
        if opts.force and patch_type != "apply":
            raise managed.patch_options_invalid(
                "force",
                "Forbidden: may not be specified for non-apply patch",
                "FieldValueForbidden",
            )
        out = warnings if warnings is not None else []
        return self._core.write(
            lambda t: patching.patch(t, ref, patch, patch_type, opts, out, subresource=subresource),
            dry_run=opts.dry_run,
        )

    async def delete(self, ref: ObjectRef, **options: Unpack[DeleteKeywords]) -> Obj:
        """Delete an object; returns its final state, or the object marked for deletion
        (deletionTimestamp set) while finalizers hold it."""
        policy = propagation_policy(options.get("propagation"))
        preconditions = options.get("preconditions")

        def run(t: Txn) -> Obj:
            final = deletion.delete(t, ref, propagation=policy, preconditions=preconditions)
            return served(ref, final)

        return self._core.write(run, dry_run=options.get("dry_run", False))

    async def batch(
        self,
        ops: Sequence[BatchOp],
        *,
        warnings: builtins.list[str] | None = None,
        **options: Unpack[WriteKeywords],
    ) -> builtins.list[Obj]:
        """Many writes in ONE transaction, all or nothing; each gets its own
        resourceVersion. A failure names the op: `op 17 (Deployment team-3/app-8): ...`.
        `force` applies to the batch's apply patches."""

        def run(t: Txn, opts: WriteOptions, out: builtins.list[str]) -> builtins.list[Obj]:
            results: builtins.list[Obj] = []
            for i, op in enumerate(ops):
                try:
                    results.append(apply_op(t, op, opts, out))
                except GitkrmError as e:
                    raise prefixed(e, f"op {i} ({describe(op)})") from e
            return results

        with gc_paused():
            return self._write(run, warnings, options)

    async def expire_events(self, *, now: float, ttl: float, limit: int) -> int:
        """Delete the Events last observed more than `ttl` seconds before `now`, and the
        oldest beyond `limit` (kube-apiserver's --event-ttl; see expiry.py); returns how
        many went."""
        return self._core.write(
            lambda t: expiry.expire(t, now=now, ttl=ttl, limit=limit), dry_run=False
        )

    def _write(
        self,
        write: Callable[[Txn, WriteOptions, builtins.list[str]], T],
        warnings: builtins.list[str] | None,
        options: WriteKeywords,
    ) -> T:
        """One write transaction (none committed for dryRun) with the options checked;
        admission warnings are appended to `warnings`."""
        opts = WriteOptions.of(**options)
        out = warnings if warnings is not None else []
        return self._core.write(lambda t: write(t, opts, out), dry_run=opts.dry_run)

    # -- watch -----------------------------------------------------------------------------

    def watch(
        self,
        gvk: GVK,
        namespace: str | None = None,
        resource_version: str | None = None,
        **options: Unpack[WatchKeywords],
    ) -> AsyncIterator[WatchEvent]:
        """Changes of a kind as WatchEvents (shared and read-only), in revision order.

        Selectors and the revision are checked here; an rv older than the compaction
        revision raises Expired (here, or from the iterator if compaction catches up
        before the first event).
        """
        core = self._core
        info = core.kinds.served(gvk)
        kind = core.kinds.of(gvk.group, gvk.kind)
        sel = reads.Selectors.parse(
            info, options.get("label_selector"), options.get("field_selector")
        )
        start: int | None = None
        if resource_version not in (None, "", "0"):
            start = reads.parse_rv(str(resource_version))
            compact_rv = core.current_compact_rv()
            if start < compact_rv:
                raise too_old(start, compact_rv)
        spec = WatchSpec(
            kind=kind,
            api_version=info.gvk.api_version,
            ns=(namespace or None) if kind.namespaced else None,
            start=start,
            labels=sel.labels,
            fields=sel.fields,
            allow_bookmarks=options.get("allow_bookmarks", False),
        )
        return watch_events(core, spec)
