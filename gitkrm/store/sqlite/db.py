"""The SQLite file: connection, pragmas, schema and the single-writer lock.

WAL with synchronous=NORMAL: a COMMIT has reached the WAL file through write(2) before it
returns, so a killed process (kill -9) never loses an acknowledged write; only power loss
could (out of scope). Readers in other processes see committed data while the writer works.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gitkrm.errors import Conflict, NotFound

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 5000
CHECKPOINT_INTERVAL = 0.5  # seconds
# Past this many frames (4 KiB pages) in the WAL, the Checkpointer has the writer restart
# it (see Checkpointer).
RESTART_FRAMES = 4096
# The writer restarts the WAL once at most this many frames are left to copy.
CATCH_UP_FRAMES = 256
WAL_SIZE_LIMIT = 64 * 1024 * 1024

_DDL = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    # The live objects: one row per object, its JSON bytes as stored (storage version).
    # A rowid table: a WITHOUT ROWID row this large spills into overflow pages, which
    # more than doubled the bytes each commit writes.
    """CREATE TABLE IF NOT EXISTS objects (
        gk TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL,
        rv INTEGER NOT NULL, labels BLOB, data BLOB NOT NULL,
        UNIQUE (gk, ns, name))""",
    # Every write appends one row and links it to the key's previous row (prev_rv), so
    # history needs no index by key (an index costs a third of a single write's commit).
    # `data` is the object after the change (for DELETED its final state); while that
    # version is the live one it stays NULL and lives in `objects` only, and the triggers
    # below move it here when the object changes again. A create thus writes its JSON
    # once. Compaction keeps, below the compaction revision, only the latest row of each
    # live key.
    """CREATE TABLE IF NOT EXISTS events (
        rv INTEGER PRIMARY KEY, gk TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL,
        type TEXT NOT NULL, prev_rv INTEGER, data BLOB)""",
    # Writes to objects append their event inside SQLite (one statement per write: the
    # hot path of a 10,000-object batch). Deletes append their DELETED event explicitly:
    # it carries the final state, not the stored one.
    """CREATE TRIGGER IF NOT EXISTS objects_added AFTER INSERT ON objects BEGIN
        INSERT INTO events (rv, gk, ns, name, type, prev_rv, data)
        VALUES (NEW.rv, NEW.gk, NEW.ns, NEW.name, 'ADDED', NULL, NULL); END""",
    """CREATE TRIGGER IF NOT EXISTS objects_modified AFTER UPDATE ON objects BEGIN
        UPDATE events SET data = OLD.data WHERE rv = OLD.rv;
        INSERT INTO events (rv, gk, ns, name, type, prev_rv, data)
        VALUES (NEW.rv, NEW.gk, NEW.ns, NEW.name, 'MODIFIED', OLD.rv, NULL); END""",
    """CREATE TRIGGER IF NOT EXISTS objects_deleted AFTER DELETE ON objects BEGIN
        UPDATE events SET data = OLD.data WHERE rv = OLD.rv; END""",
)

# An events row's object: its own data, or (while it is the live version) the object's.
EVENT_DATA = (
    "coalesce(e.data, (SELECT o.data FROM objects o "
    "WHERE o.gk = e.gk AND o.ns = e.ns AND o.name = e.name))"
)


def connect(path: str, *, read_only: bool) -> sqlite3.Connection:
    """Open the database with the pragmas the store relies on.

    `isolation_level=None`: transactions are explicit (BEGIN IMMEDIATE ... COMMIT), so
    nothing is ever committed behind the store's back.
    """
    memory = path == ":memory:"
    if read_only and not memory and not Path(path).exists():
        raise NotFound(f"store {path} does not exist")
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if not memory and not read_only:
        conn.execute("PRAGMA journal_mode = WAL")
        # Checkpoints (they fsync) run on the Checkpointer's thread, not inside commits.
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        # A WAL that grew during a burst of writes is cut back to this when it restarts.
        conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA cache_size = -65536")
    conn.execute("PRAGMA temp_store = MEMORY")
    if not memory:
        conn.execute("PRAGMA mmap_size = 1073741824")  # reads without a copy per page
    if read_only:
        conn.execute("PRAGMA query_only = 1")
    else:
        conn.execute("BEGIN IMMEDIATE")
        for stmt in _DDL:
            conn.execute(stmt)
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?), ('rv', 0), "
            "('compact_rv', 0)",
            (SCHEMA_VERSION,),
        )
        conn.execute("COMMIT")
    return conn


def read_meta(conn: sqlite3.Connection, key: str) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else 0


def read_rv(conn: sqlite3.Connection) -> int:
    """The latest committed revision: the newest event, or the revision saved by the last
    compaction (which may have removed the newest rows). Not written per commit: that
    would cost a page write per transaction."""
    row = conn.execute(
        "SELECT max(coalesce((SELECT max(rv) FROM events), 0), "
        "(SELECT value FROM meta WHERE key = 'rv'))"
    ).fetchone()
    return int(row[0] or 0)


class Checkpointer:
    """Copies the WAL into the database file from a background thread.

    SQLite's automatic checkpoint runs inside a COMMIT and fsyncs; moving it here keeps
    commits (acknowledgements) fast. Its own connection: a PASSIVE checkpoint never
    blocks the writer or readers.

    A WAL restarts (the next commit writes it from its start, over pages the OS still
    caches) only once every frame is copied, which never happens while writes go on
    without a pause: it would grow without bound, and every commit would extend the file
    (page cache allocation: a fifth of a single create's cost). So once it is past
    RESTART_FRAMES, this thread copies until a few frames are left (or for eight passes,
    when the writer outruns it) and sets `restart_wanted`; the writer then copies the rest
    itself between two transactions (`restart_wal`).
    """

    def __init__(self, path: str, *, interval: float | None = None) -> None:
        self._path = path
        self._interval = CHECKPOINT_INTERVAL if interval is None else interval
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self.restart_wanted = False
        self._thread = threading.Thread(target=self._run, name="gitkrm-checkpoint", daemon=True)
        self._thread.start()

    def mark(self) -> None:
        if not self._dirty.is_set():  # set() takes a lock: once per interval is enough
            self._dirty.set()

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            while not self._stop.is_set():
                self._stop.wait(self._interval)
                if self._dirty.is_set():
                    self._dirty.clear()
                    with contextlib.suppress(sqlite3.Error):
                        self._checkpoint(conn)
        finally:
            conn.close()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        frames = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
        if frames < RESTART_FRAMES:
            return
        for _ in range(8):  # each pass copies what the writer appended during the last one
            now = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
            if now - frames <= CATCH_UP_FRAMES:  # a short pass: the writer appended little
                break
            frames = now
        # Wanted even when the writer outran every pass (a loaded machine): it then copies
        # what it appended during the last pass, a bounded cost, and the WAL stays bounded.
        self.restart_wanted = True

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def restart_wal(conn: sqlite3.Connection) -> bool:
    """On the writer's connection, between transactions: copy the WAL's last frames so the
    next commit restarts it. Gives up at once (False; it is tried again later) when a
    reader in another process still uses the WAL or the Checkpointer is copying."""
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        busy: int = conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()[0]
    except sqlite3.Error:
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return busy == 0


@contextlib.contextmanager
def read_txn(conn: sqlite3.Connection) -> Iterator[None]:
    """A read transaction: every SELECT inside sees one snapshot (matters for readers in
    other processes than the writer)."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


_HELD: set[int] = set()
"""The fds of the writer locks this process holds (see _forget_locks_in_child)."""


def _forget_locks_in_child() -> None:
    """A forked child (a render worker) must not keep the writer lock: an flock belongs to
    the open file, which the child shares, so a worker outliving a killed agent would keep
    the store locked. Closing the child's copy (never LOCK_UN: that would unlock the
    parent) leaves the lock to the parent alone."""
    for fd in list(_HELD):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_forget_locks_in_child)


@dataclass
class WriterLock:
    """An flock'd `<db>.lock` file: at most one writer process per store file."""

    path: Path
    handle: IO[str]

    @classmethod
    def acquire(cls, db_path: str) -> WriterLock:
        path = Path(db_path + ".lock")
        handle = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            pid = handle.read().strip() or "unknown"
            handle.close()
            raise Conflict(
                f"store {os.path.abspath(db_path)} is in use by another gitkrm process (pid {pid})"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        _HELD.add(handle.fileno())
        return cls(path=path, handle=handle)

    def release(self) -> None:
        if self.handle.closed:
            return
        _HELD.discard(self.handle.fileno())
        with contextlib.suppress(OSError):
            self.handle.seek(0)
            self.handle.truncate()
        fcntl.flock(self.handle.fileno(), fcntl.LOCK_UN)
        self.handle.close()
