"""The watch iterator: replay from history, then live events from the hub, in order.

From a resourceVersion R: every change after R, none missing, none twice. History rows are
read in chunks; the chunk that finds the end of history subscribes to the hub in the same
synchronous step (no write can commit in between: writes run on the loop thread too), so
the hub queue starts exactly where history ends. Without R (or with "0"): ADDED for every
current object, then the changes after that snapshot.

A revision older than the compaction revision raises `Expired` from the iterator (the HTTP
API turns it into an ERROR event with a 410 Status). A watcher dropped by the hub for
falling behind, or by `close()`, ends cleanly after draining its queue.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from gitkrm.errors import Expired
from gitkrm.krm import Obj
from gitkrm.krm.fields import FieldSelector
from gitkrm.krm.labels import LabelSelector
from gitkrm.store.protocol import EventType, WatchEvent
from gitkrm.store.sqlite import db
from gitkrm.store.sqlite.hub import HubEvent, Subscriber, frame, make_event, serve_bytes
from gitkrm.store.sqlite.kinds import Kind

if TYPE_CHECKING:
    from gitkrm.store.sqlite.core import Core

CHUNK = 500


@dataclass(frozen=True, slots=True)
class WatchSpec:
    kind: Kind
    api_version: str  # the served version
    ns: str | None
    start: int | None  # None: initial ADDED events first
    labels: LabelSelector | None
    fields: FieldSelector | None
    allow_bookmarks: bool


def too_old(rv: int, compact_rv: int) -> Expired:
    return Expired(f"too old resource version: {rv} ({compact_rv})")


class _Filter:
    """Selector matching and the ADDED/MODIFIED/DELETED rewriting kube's cacher does."""

    def __init__(self, spec: WatchSpec) -> None:
        self.spec = spec
        self.stored = b'{"apiVersion":"' + spec.kind.storage_api_version.encode() + b'"'
        self.served = b'{"apiVersion":"' + spec.api_version.encode() + b'"'
        self.selective = spec.labels is not None or spec.fields is not None

    def passes(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        if self.spec.labels is not None and not self.spec.labels.matches(
            (obj.get("metadata") or {}).get("labels") or {}
        ):
            return False
        return self.spec.fields is None or self.spec.fields.matches(obj)

    def event(self, ev: HubEvent) -> WatchEvent | None:
        view = ev.view
        if not self.selective:
            return view(ev.type, stored_prefix=self.stored, served_prefix=self.served)
        if ev.type is EventType.DELETED:
            if not self.passes(ev.obj()):
                return None
            return view(ev.type, stored_prefix=self.stored, served_prefix=self.served)
        cur = self.passes(ev.obj())
        old = self.passes(ev.prev_obj())
        if cur:
            etype = EventType.MODIFIED if old else EventType.ADDED
            return view(etype, stored_prefix=self.stored, served_prefix=self.served)
        if old:
            return view(
                EventType.DELETED,
                stored_prefix=self.stored,
                served_prefix=self.served,
                from_prev=True,
            )
        return None

    def initial(self, data: bytes) -> WatchEvent | None:
        if self.selective and not self.passes(orjson.loads(data)):
            return None
        served = serve_bytes(data, stored_prefix=self.stored, served_prefix=self.served)
        return make_event(EventType.ADDED, served)

    def bookmark(self, rv: int) -> WatchEvent:
        obj = {
            "kind": self.spec.kind.kind,
            "apiVersion": self.spec.api_version,
            "metadata": {"resourceVersion": str(rv)},
        }
        return WatchEvent(
            type=EventType.BOOKMARK, obj=obj, raw=frame(EventType.BOOKMARK, orjson.dumps(obj))
        )


def _history(core: Core, spec: WatchSpec, after: int, upto: int) -> list[HubEvent]:
    """Up to CHUNK events of the watched kind with after < rv <= upto, in order."""
    sql = (
        f"SELECT rv, gk, ns, name, type, {db.EVENT_DATA}, prev_rv FROM events e "
        "WHERE rv > ? AND rv <= ? AND gk = ?"
    )
    args: list[object] = [after, upto, spec.kind.key]
    if spec.ns is not None:
        sql += " AND ns = ?"
        args.append(spec.ns)
    sql += " ORDER BY rv LIMIT ?"
    args.append(CHUNK)
    rows = core.conn.execute(sql, args).fetchall()
    selective = spec.labels is not None or spec.fields is not None
    out = []
    for row in rows:
        prev = None
        if selective and row[4] == "MODIFIED":
            p = core.conn.execute(
                f"SELECT {db.EVENT_DATA} FROM events e WHERE rv = ?", (row[6],)
            ).fetchone()
            prev = p[0] if p else None
        out.append(HubEvent.from_row(row[:6], prev))
    return out


def _snapshot(core: Core, spec: WatchSpec) -> list[bytes]:
    sql = "SELECT data FROM objects WHERE gk = ?"
    args: list[object] = [spec.kind.key]
    if spec.ns is not None:
        sql += " AND ns = ?"
        args.append(spec.ns)
    return [r[0] for r in core.conn.execute(sql + " ORDER BY ns, name", args)]


async def watch_events(core: Core, spec: WatchSpec) -> AsyncIterator[WatchEvent]:
    flt = _Filter(spec)
    sub: Subscriber | None = None
    interval = core.options.bookmark_interval if spec.allow_bookmarks else None
    next_bookmark = time.monotonic() + interval if interval is not None else None
    try:
        # 1. The starting point: a snapshot, or replay of history after spec.start.
        if spec.start is None:
            with db.read_txn(core.conn):
                rows = _snapshot(core, spec)
                last = core.current_rv()
                if not core.read_only:
                    sub = core.hub.subscribe(
                        gk=spec.kind.key, ns=spec.ns, maxsize=core.options.watch_queue_size
                    )
            for data in rows:
                ev = flt.initial(data)
                if ev is not None:
                    yield ev
        else:
            last = spec.start
        # 2. History (the writer: until caught up; a reader process: forever, by polling).
        while sub is None and not core.closed:
            with db.read_txn(core.conn):
                compact_rv = core.current_compact_rv()
                if last < compact_rv:
                    raise too_old(last, compact_rv)
                upto = core.current_rv()
                chunk = _history(core, spec, last, upto)
                if len(chunk) < CHUNK and not core.read_only:
                    sub = core.hub.subscribe(
                        gk=spec.kind.key, ns=spec.ns, maxsize=core.options.watch_queue_size
                    )
            for hev in chunk:
                out = flt.event(hev)
                last = hev.rv
                if out is not None:
                    yield out
            if len(chunk) < CHUNK:
                last = max(last, upto)
                if core.read_only:
                    if next_bookmark is not None and time.monotonic() >= next_bookmark:
                        yield flt.bookmark(last)
                        next_bookmark = time.monotonic() + (interval or 0)
                    await asyncio.sleep(core.options.poll_interval)
        # 3. Live events from the hub.
        while sub is not None:
            if sub.queue:
                hev = sub.queue.popleft()
                if hev.rv <= last:
                    continue
                last = hev.rv
                out = flt.event(hev)
                if out is not None:
                    yield out
                continue
            if sub.dropped:
                return
            if next_bookmark is not None:
                now = time.monotonic()
                if now >= next_bookmark:
                    last = max(last, core.hub.last_rv)
                    yield flt.bookmark(last)
                    next_bookmark = time.monotonic() + (interval or 0)
                    continue
                await sub.wait(next_bookmark - now)
            else:
                await sub.wait(None)
    finally:
        if sub is not None:
            core.hub.unsubscribe(sub)
