"""The watch hub: fans committed changes out to in-process watchers.

A change is serialized once per served version (`WatchEvent.raw`) and decoded once
(`WatchEvent.obj`), both shared by every watcher. Each watcher has a bounded queue; one
that falls behind by more than its size is dropped from the hub: it still receives what
was queued, then its iterator ends cleanly, and it can resume from its last
resourceVersion. Writers never wait for watchers and memory stays bounded.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable

import orjson

from gitkrm.krm import Obj
from gitkrm.store.protocol import EventType, WatchEvent
from gitkrm.store.sqlite.txn import Change

_TYPES = {t.value: t for t in EventType}


def api_version_prefix(api_version: str) -> bytes:
    return b'{"apiVersion":"' + api_version.encode() + b'"'


def serve_bytes(data: bytes, *, stored_prefix: bytes, served_prefix: bytes) -> bytes:
    """Stored JSON rewritten to the served apiVersion, without decoding when possible."""
    if stored_prefix == served_prefix and data.startswith(served_prefix):
        return data
    if data.startswith(stored_prefix):
        return served_prefix + data[len(stored_prefix) :]
    if data.startswith(served_prefix):
        return data
    obj = orjson.loads(data)
    obj["apiVersion"] = served_prefix[len(b'{"apiVersion":"') : -1].decode()
    return orjson.dumps(obj)


def frame(etype: EventType, data: bytes) -> bytes:
    """One watch line: `{"type":"ADDED","object":{...}}` and a newline."""
    return b'{"type":"' + etype.value.encode() + b'","object":' + data + b"}\n"


def make_event(etype: EventType, data: bytes) -> WatchEvent:
    return WatchEvent(type=etype, obj=orjson.loads(data), raw=frame(etype, data))


class HubEvent:
    """A committed change as the hub keeps it, with its shared WatchEvent views."""

    __slots__ = ("_obj", "_prev_obj", "_views", "data", "gk", "name", "ns", "prev", "rv", "type")

    def __init__(
        self,
        *,
        rv: int,
        gk: str,
        ns: str,
        name: str,
        type: EventType,
        data: bytes,
        prev: bytes | None,
    ) -> None:
        self.rv = rv
        self.gk = gk
        self.ns = ns
        self.name = name
        self.type = type
        self.data = data
        self.prev = prev
        self._views: dict[tuple[bytes, EventType, bool], WatchEvent] = {}
        self._obj: Obj | None = None
        self._prev_obj: Obj | None = None

    def obj(self) -> Obj:
        """The stored object, decoded once (read-only: shared by every watcher)."""
        if self._obj is None:
            self._obj = orjson.loads(self.data)
        return self._obj

    def prev_obj(self) -> Obj | None:
        if self.prev is None:
            return None
        if self._prev_obj is None:
            self._prev_obj = orjson.loads(self.prev)
        return self._prev_obj

    @classmethod
    def of(cls, c: Change) -> HubEvent:
        return cls(rv=c.rv, gk=c.gk, ns=c.ns, name=c.name, type=c.type, data=c.data, prev=c.prev)

    @classmethod
    def from_row(cls, row: tuple[int, str, str, str, str, bytes], prev: bytes | None) -> HubEvent:
        rv, gk, ns, name, t, data = row
        return cls(rv=rv, gk=gk, ns=ns, name=name, type=_TYPES[t], data=data, prev=prev)

    def view(
        self,
        etype: EventType,
        *,
        stored_prefix: bytes,
        served_prefix: bytes,
        from_prev: bool = False,
    ) -> WatchEvent:
        """The shared WatchEvent of this change as `etype` at the served version.

        `from_prev`: the previous state with this change's resourceVersion (an object that
        stopped matching a watcher's selectors arrives as DELETED with its old content).
        """
        key = (served_prefix, etype, from_prev)
        ev = self._views.get(key)
        if ev is None:
            if from_prev and self.prev is not None:
                obj = orjson.loads(self.prev)
                obj["metadata"]["resourceVersion"] = str(self.rv)
                data = orjson.dumps(obj)
            else:
                data = self.data
            data = serve_bytes(data, stored_prefix=stored_prefix, served_prefix=served_prefix)
            if data is self.data and self._obj is not None:
                # Decoded already (a selector looked at it): the same read-only dict.
                ev = WatchEvent(type=etype, obj=self._obj, raw=frame(etype, data))
            else:
                ev = make_event(etype, data)
            self._views[key] = ev
        return ev


class Subscriber:
    """One watcher's bounded queue of hub events (of one kind, optionally one namespace)."""

    __slots__ = ("dropped", "gk", "hub", "maxsize", "ns", "queue", "waiter")

    def __init__(self, hub: Hub, *, gk: str, ns: str | None, maxsize: int) -> None:
        self.hub = hub
        self.gk = gk
        self.ns = ns
        self.maxsize = maxsize
        self.queue: deque[HubEvent] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.dropped = False

    def push(self, ev: HubEvent) -> None:
        if len(self.queue) >= self.maxsize:
            self.dropped = True
            self.hub.unsubscribe(self)
        else:
            self.queue.append(ev)
        self.wake()

    def wake(self) -> None:
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def wait(self, delay: float | None) -> None:
        """Until something is queued, the watcher is dropped, or `delay` passes."""
        if self.queue or self.dropped:
            return
        loop = asyncio.get_running_loop()
        self.waiter = loop.create_future()
        handle = loop.call_later(delay, self.wake) if delay is not None else None
        try:
            await self.waiter
        finally:
            self.waiter = None
            if handle is not None:
                handle.cancel()


class Hub:
    """Subscribers by kind; `publish` is called once per committed transaction."""

    def __init__(self) -> None:
        self._subs: dict[str, list[Subscriber]] = {}
        self.last_rv = 0
        self.compact_rv = 0

    def subscribe(self, *, gk: str, ns: str | None, maxsize: int) -> Subscriber:
        sub = Subscriber(self, gk=gk, ns=ns, maxsize=maxsize)
        self._subs.setdefault(gk, []).append(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        subs = self._subs.get(sub.gk)
        if subs is not None and sub in subs:
            subs.remove(sub)
            if not subs:
                del self._subs[sub.gk]

    def watchers(self) -> int:
        return sum(len(s) for s in self._subs.values())

    def publish(self, changes: Iterable[Change], rv: int) -> None:
        self.last_rv = rv
        subs_by_gk = self._subs
        if not subs_by_gk:
            return
        for c in changes:
            subs = subs_by_gk.get(c.gk)
            if not subs:
                continue
            ev = HubEvent.of(c)
            for s in tuple(subs):
                if s.ns is None or s.ns == c.ns:
                    s.push(ev)

    def close_all(self) -> None:
        """End every watcher (store closed): each drains its queue, then stops."""
        for subs in list(self._subs.values()):
            for s in list(subs):
                s.dropped = True
                self.unsubscribe(s)
                s.wake()
