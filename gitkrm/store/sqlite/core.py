"""The state one SqliteStore shares among its parts, and the write-transaction runner."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import orjson

from gitkrm.errors import GitkrmError, MethodNotAllowed, NotFound
from gitkrm.krm import Obj
from gitkrm.krm.clock import WALL, Clock
from gitkrm.schema import Registry
from gitkrm.store.sqlite import db
from gitkrm.store.sqlite.constraints import Constrained
from gitkrm.store.sqlite.history import compact
from gitkrm.store.sqlite.hub import Hub
from gitkrm.store.sqlite.kinds import CRD_GK, Kinds, gk_key
from gitkrm.store.sqlite.policies import Policies
from gitkrm.store.sqlite.txn import Txn

log = logging.getLogger(__name__)

T = TypeVar("T")

_gc_pauses = 0


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building many acyclic dicts from JSON.

    Decoded JSON cannot form reference cycles, yet allocating 10,000 objects triggers
    several full collections that cost 5x the decoding itself. On resuming, everything
    the GC tracks moves to its oldest generation (gc.freeze, then gc.unfreeze): the
    first allocation after gc.enable() would otherwise scan every object made while
    paused (a seventh of a 10,000-object batch); they are scanned by the next full
    collection instead, as long-lived objects are.
    """
    global _gc_pauses
    enabled = gc.isenabled()
    _gc_pauses += 1
    gc.disable()
    try:
        yield
    finally:
        _gc_pauses -= 1
        if enabled and _gc_pauses == 0:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


HISTORY_LIMIT = 50_000
WATCH_QUEUE_SIZE = 10_000
BOOKMARK_INTERVAL = 60.0
POLL_INTERVAL = 0.25


@dataclass(frozen=True, slots=True)
class Options:
    history_limit: int = HISTORY_LIMIT
    watch_queue_size: int = WATCH_QUEUE_SIZE
    bookmark_interval: float = BOOKMARK_INTERVAL
    poll_interval: float = POLL_INTERVAL
    clock: Clock = WALL  # creation, deletion and managedFields times (a twin's: virtual)


class Core:
    """Connection, registry, revision counters and the watch hub of one store."""

    def __init__(
        self,
        *,
        conn: sqlite3.Connection,
        registry: Registry,
        read_only: bool,
        path: str,
        options: Options,
    ) -> None:
        self.conn = conn
        self.cursor = conn.cursor()  # for row writes (see Txn)
        self.registry = registry
        self.kinds = Kinds(registry)
        self.read_only = read_only
        self.path = path
        self.options = options
        self.rv = db.read_rv(conn)
        self.compact_rv = db.read_meta(conn, "compact_rv")
        self.ns_cache: dict[str, bool] = {}  # namespace name -> terminating
        self.policies = Policies()
        self.constrained = Constrained()
        self.hub = Hub()
        self.hub.last_rv = self.rv
        self.closed = False
        self.checkpointer: db.Checkpointer | None = None
        if not read_only and path != ":memory:":
            self.checkpointer = db.Checkpointer(path)
        self._compaction_scheduled = False

    # -- revisions -----------------------------------------------------------------------

    def current_rv(self) -> int:
        """The latest committed revision (read from the file in a reader process)."""
        if self.read_only:
            return db.read_rv(self.conn)
        return self.rv

    def current_compact_rv(self) -> int:
        if self.read_only:
            return db.read_meta(self.conn, "compact_rv")
        return self.compact_rv

    # -- writes --------------------------------------------------------------------------

    def check_writable(self) -> None:
        if self.closed:
            raise MethodNotAllowed(f"store {self.path} is closed")
        if self.read_only:
            raise MethodNotAllowed(f"store {self.path} is opened read-only: writes are not allowed")

    def write(self, fn: Callable[[Txn], T], *, dry_run: bool) -> T:
        """Run `fn` in one transaction: all of it is committed, or none of it.

        A dry run does everything but the COMMIT. Watchers hear of the changes only after
        COMMIT; the caller's coroutine returns after it (the acknowledgement).
        """
        self.check_writable()
        checkpointer = self.checkpointer
        if checkpointer is not None and checkpointer.restart_wanted:
            checkpointer.restart_wanted = False
            db.restart_wal(self.conn)
        txn = Txn(core=self, cursor=self.cursor, dry_run=dry_run)
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(txn)
            if dry_run:
                conn.execute("ROLLBACK")
                self._after_rollback(txn)
                return result
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._after_rollback(txn)
            raise
        self.rv = txn.rv
        if checkpointer is not None:
            checkpointer.mark()
        if txn.changes:
            self.hub.publish(txn.changes, self.rv)
            self._maybe_compact()
        return result

    def _after_rollback(self, txn: Txn) -> None:
        """Undo what lives outside SQLite: cached namespaces, policies and registered CRDs."""
        self.ns_cache.clear()
        self.policies.reset()
        self.constrained.reset()
        if not txn.crds_touched:
            return
        for name in txn.crds_touched:
            with contextlib.suppress(GitkrmError):
                self.registry.unregister_crd(name)
            row = self.conn.execute(
                "SELECT data FROM objects WHERE gk = ? AND ns = '' AND name = ?",
                (gk_key(CRD_GK.group, CRD_GK.kind), name),
            ).fetchone()
            if row is not None:
                self.registry.register_crd(orjson.loads(row[0]))
        self.kinds.invalidate()

    def register_crd(self, txn: Txn, crd: Obj) -> None:
        """Register a CRD's kinds in the same write (sets its status in place)."""
        txn.crds_touched.add(crd["metadata"]["name"])
        self.registry.register_crd(crd)
        self.kinds.invalidate()

    def unregister_crd(self, txn: Txn, name: str) -> None:
        txn.crds_touched.add(name)
        with contextlib.suppress(NotFound):
            self.registry.unregister_crd(name)
        self.kinds.invalidate()

    def register_stored_crds(self) -> None:
        """Re-register every stored CRD (on open): custom resources are served again."""
        rows = self.conn.execute(
            "SELECT name, data FROM objects WHERE gk = ?",
            (gk_key(CRD_GK.group, CRD_GK.kind),),
        ).fetchall()
        for name, data in rows:
            try:
                self.registry.register_crd(orjson.loads(data))
            except GitkrmError as e:
                log.warning("stored CustomResourceDefinition %s not served: %s", name, e)
        self.kinds.invalidate()

    # -- compaction ----------------------------------------------------------------------

    def _maybe_compact(self) -> None:
        limit = self.options.history_limit
        slack = max(64, limit // 10)
        if self.rv - self.compact_rv <= limit + slack or self._compaction_scheduled:
            return
        self._compaction_scheduled = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.compact_now()
            return
        loop.call_soon(self.compact_now)

    def compact_now(self, upto: int | None = None) -> None:
        """Forget history up to `upto` (default: all but the last history_limit revisions)."""
        self._compaction_scheduled = False
        if self.closed or self.read_only:
            return
        target = self.rv - self.options.history_limit if upto is None else min(upto, self.rv)
        if target <= self.compact_rv:
            return
        compact(self.conn, prev=self.compact_rv, upto=target, rv=self.rv)
        self.compact_rv = target
        self.hub.compact_rv = target
