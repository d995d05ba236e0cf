"""One write transaction: resourceVersion allocation, row writes, pending watch events.

Every write of the store runs synchronously on the loop thread between BEGIN IMMEDIATE and
COMMIT, so two transactions never interleave and watchers see events only after COMMIT.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from gitkrm.errors import AlreadyExists, NotFound
from gitkrm.krm import Obj
from gitkrm.store.protocol import EventType
from gitkrm.store.sqlite.kinds import Kind

if TYPE_CHECKING:
    from gitkrm.store.sqlite.core import Core

# OR FAIL: a failed statement always rolls back its whole transaction (Core.write), so
# SQLite need not journal each statement to undo it alone (with the events trigger, that
# statement journal was a third of an insert's cost).
# Parameters: sqlite3 binds str, int and bytearray at once, but sends bytes and None
# through its adapter lookup (which raises and drops an AttributeError per value): BLOBs
# are passed as bytearrays, and a NULL labels column is written by a statement of its own.
_INSERT = "INSERT OR FAIL INTO objects (gk, ns, name, rv, labels, data) VALUES (?,?,?,?,?,?)"
_INSERT_NO_LABELS = "INSERT OR FAIL INTO objects (gk, ns, name, rv, data) VALUES (?,?,?,?,?)"
_UPDATE = (
    "UPDATE OR FAIL objects SET rv = ?, labels = ?, data = ? WHERE gk = ? AND ns = ? AND name = ?"
)
_UPDATE_NO_LABELS = (
    "UPDATE OR FAIL objects SET rv = ?, labels = NULL, data = ? "
    "WHERE gk = ? AND ns = ? AND name = ?"
)


@dataclass(slots=True)
class Change:
    """A committed change, published to watchers after COMMIT."""

    rv: int
    gk: str
    ns: str
    name: str
    type: EventType
    data: bytes
    prev: bytes | None  # the stored bytes before the change (None for ADDED)


@dataclass(slots=True)
class Stored:
    """An object as read inside a transaction."""

    rv: int
    data: bytes
    obj: Obj


class Txn:
    """The state of one write transaction (a plain slotted class: one is made per write)."""

    __slots__ = (
        "changes",
        "conn",
        "core",
        "crds_touched",
        "cursor",
        "dry_run",
        "rv",
        "wire_fields",
    )

    def __init__(self, *, core: Core, cursor: sqlite3.Cursor, dry_run: bool = False) -> None:
        self.core = core
        self.conn: sqlite3.Connection = core.conn
        # Row writes reuse one cursor: conn.execute makes a new cursor per statement.
        self.cursor = cursor
        self.dry_run = dry_run
        self.rv = core.rv
        self.changes: list[Change] = []
        self.crds_touched: set[str] = set()
        # An object's managedFields list and its serialized form (managed.record_update),
        # for put() to splice in.
        self.wire_fields: tuple[list[Any], orjson.Fragment] | None = None

    def load(self, kind: Kind, ns: str, name: str) -> Stored:
        """The stored object (NotFound with the API server's message when missing)."""
        row = self.conn.execute(
            "SELECT rv, data FROM objects WHERE gk = ? AND ns = ? AND name = ?",
            (kind.key, ns, name),
        ).fetchone()
        if row is None:
            raise NotFound(f'{kind.resource} "{name}" not found')
        return Stored(rv=row[0], data=row[1], obj=orjson.loads(row[1]))

    def exists(self, kind: Kind, ns: str, name: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM objects WHERE gk = ? AND ns = ? AND name = ?", (kind.key, ns, name)
        ).fetchone()
        return row is not None

    def put(
        self,
        kind: Kind,
        ns: str,
        name: str,
        obj: Obj,
        *,
        old: Stored | None,
    ) -> bytes:
        """Insert (old is None) or replace an object; stamps its resourceVersion.

        Returns the stored bytes. `obj` must be at the storage version. The events row is
        appended by the table's triggers (db.py).
        """
        self.rv += 1
        rv = self.rv
        md = obj["metadata"]
        md["resourceVersion"] = str(rv)
        wire = self.wire_fields
        if wire is not None and md.get("managedFields") is wire[0]:
            self.wire_fields = None
            md["managedFields"] = wire[1]
            try:
                data = orjson.dumps(obj)
            finally:
                md["managedFields"] = wire[0]
        else:
            data = orjson.dumps(obj)
        labels = md.get("labels")
        blob = bytearray(data)
        if old is None:
            try:
                if labels:
                    self.cursor.execute(
                        _INSERT, (kind.key, ns, name, rv, bytearray(orjson.dumps(labels)), blob)
                    )
                else:
                    self.cursor.execute(_INSERT_NO_LABELS, (kind.key, ns, name, rv, blob))
            except sqlite3.IntegrityError:
                self.rv -= 1
                raise AlreadyExists(f'{kind.resource} "{name}" already exists') from None
            self.changes.append(Change(rv, kind.key, ns, name, EventType.ADDED, data, None))
        else:
            if labels:
                lab = bytearray(orjson.dumps(labels))
                self.cursor.execute(_UPDATE, (rv, lab, blob, kind.key, ns, name))
            else:
                self.cursor.execute(_UPDATE_NO_LABELS, (rv, blob, kind.key, ns, name))
            self.changes.append(Change(rv, kind.key, ns, name, EventType.MODIFIED, data, old.data))
        if kind.is_namespace:
            self.core.ns_cache.pop(name, None)
        elif kind.constrains and old is None:
            self.core.constrained.reset()
        self.core.policies.touched(kind)
        if self.dry_run:  # nothing is committed: show no new revision
            if old is None:
                del md["resourceVersion"]
            else:
                md["resourceVersion"] = str(old.rv)
        return data

    def remove(self, kind: Kind, ns: str, name: str, final: Obj, *, old: Stored) -> bytes:
        """Delete an object; `final` (its last state) gets the deletion's resourceVersion."""
        self.rv += 1
        rv = self.rv
        final["metadata"]["resourceVersion"] = str(rv)
        data = orjson.dumps(final)
        self.cursor.execute(
            "DELETE FROM objects WHERE gk = ? AND ns = ? AND name = ?", (kind.key, ns, name)
        )
        self.core.policies.touched(kind)
        self.cursor.execute(
            "INSERT INTO events (rv, gk, ns, name, type, prev_rv, data) VALUES (?,?,?,?,?,?,?)",
            (rv, kind.key, ns, name, "DELETED", old.rv, bytearray(data)),
        )
        self.changes.append(Change(rv, kind.key, ns, name, EventType.DELETED, data, old.data))
        if self.dry_run:
            final["metadata"]["resourceVersion"] = str(old.rv)
        if kind.is_namespace:
            self.core.ns_cache.pop(name, None)
        elif kind.constrains:
            self.core.constrained.reset()
        return data
