"""The events table: compaction and the state of a collection at a past revision.

Each write appends (rv, key, type, object). Compaction to revision C is etcd's: history
after C is kept whole; at or below C only the latest row of each key that still exists
remains. So for any R >= C, the state of a key at R is its latest row with rv <= R (absent
if there is none or it is a DELETED row), and every change after R is in the table.
"""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from gitkrm.store.sqlite.db import EVENT_DATA


def compact(conn: sqlite3.Connection, *, prev: int, upto: int, rv: int) -> None:
    """Compact history from revision `prev` (the last compaction) to `upto`."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        # A row is superseded when the key's next row is at or below `upto`; rows
        # superseded by rows at or below `prev` went in earlier compactions.
        conn.execute(
            "DELETE FROM events WHERE rv IN (SELECT prev_rv FROM events "
            "WHERE rv > ? AND rv <= ? AND prev_rv IS NOT NULL)",
            (prev, upto),
        )
        conn.execute(
            "DELETE FROM events WHERE rv > ? AND rv <= ? AND type = 'DELETED'", (prev, upto)
        )
        conn.execute("UPDATE meta SET value = ? WHERE key = 'compact_rv'", (upto,))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'rv'", (rv,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


@dataclass(frozen=True, slots=True)
class Row:
    """One object of a listing: key, labels (JSON or None) and stored bytes."""

    ns: str
    name: str
    labels: bytes | None
    data: bytes


def _live(
    conn: sqlite3.Connection, gk: str, ns: str | None, after: tuple[str, str] | None
) -> Iterator[Row]:
    sql = "SELECT ns, name, labels, data FROM objects WHERE gk = ?"
    args: list[object] = [gk]
    if ns is not None:
        sql += " AND ns = ?"
        args.append(ns)
    if after is not None:
        sql += " AND (ns, name) > (?, ?)"
        args.extend(after)
    sql += " ORDER BY ns, name"
    for r in conn.execute(sql, args):
        yield Row(ns=r[0], name=r[1], labels=r[2], data=r[3])


def _labels_of(data: bytes) -> bytes | None:
    labels = (orjson.loads(data).get("metadata") or {}).get("labels")
    return orjson.dumps(labels) if labels else None


def _at_revision(
    conn: sqlite3.Connection,
    gk: str,
    ns: str | None,
    rev: int,
    after: tuple[str, str] | None,
) -> Iterator[Row]:
    """Rows of a collection as they were at revision `rev`, in key order."""
    # The first change after `rev` of each key links to the key's state at `rev`.
    sql = "SELECT ns, name, prev_rv FROM events WHERE rv > ? AND gk = ?"
    args: list[object] = [rev, gk]
    if ns is not None:
        sql += " AND ns = ?"
        args.append(ns)
    first: dict[tuple[str, str], int | None] = {}
    for r in conn.execute(sql + " ORDER BY rv", args):
        first.setdefault((r[0], r[1]), r[2])
    changed = set(first)
    past: list[Row] = []
    for key, prev_rv in first.items():
        if prev_rv is None or (after is not None and key <= after):
            continue  # the key did not exist at `rev` (or is on an earlier page)
        row = conn.execute(f"SELECT {EVENT_DATA} FROM events e WHERE rv = ?", (prev_rv,)).fetchone()
        past.append(Row(ns=key[0], name=key[1], labels=_labels_of(row[0]), data=row[0]))
    past.sort(key=lambda r: (r.ns, r.name))
    live = (r for r in _live(conn, gk, ns, after) if (r.ns, r.name) not in changed)
    yield from heapq.merge(live, past, key=lambda r: (r.ns, r.name))


def rows_at(
    conn: sqlite3.Connection,
    *,
    gk: str,
    ns: str | None,
    rev: int,
    current: int,
    after: tuple[str, str] | None,
) -> Iterator[Row]:
    """The collection at revision `rev` (the live table when `rev` is the current one).

    The caller checked that `rev` was not compacted.
    """
    if rev >= current:
        return _live(conn, gk, ns, after)
    return _at_revision(conn, gk, ns, rev, after)


def count_at(
    conn: sqlite3.Connection,
    *,
    gk: str,
    ns: str | None,
    rev: int,
    current: int,
    after: tuple[str, str],
) -> int:
    """How many objects follow `after` at revision `rev` (remainingItemCount)."""
    if rev >= current:
        sql = "SELECT count(*) FROM objects WHERE gk = ? AND (ns, name) > (?, ?)"
        args: list[object] = [gk, *after]
        if ns is not None:
            sql += " AND ns = ?"
            args.append(ns)
        return int(conn.execute(sql, args).fetchone()[0])
    return sum(1 for _ in _at_revision(conn, gk, ns, rev, after))
