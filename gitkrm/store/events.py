"""Events: what the bundled controllers (and the agent, about its GitSources) record about
the objects they act on, as kube-controller-manager and kube-scheduler do (`kubectl
describe`, `kubectl get events`): client-go's tools/record for any Store.

A controller calls `EventSink.normal(obj, reason, message)` (or `warning`); it never waits.
The recorder writes core/v1 Events as client-go's recorder makes them (name
`<object>.<hex nanoseconds>`, involvedObject, source.component, reportingComponent,
first/lastTimestamp, count) and correlates them as its EventLogger does: the same event
again (same source, object, type, reason and message) within the TTL bumps `count` and
`lastTimestamp` of the Event already written (a merge patch; a fresh create when it
expired meanwhile), remembered for the last 4,096 distinct events. client-go's spam filter
(a token bucket per object) and its aggregation of similar messages ("(combined from
similar events)") are not modelled. The scheduler's events are written as events.k8s.io's
recorder makes them, read back through core/v1 (eventTime, action, reportingInstance, no
source; a repeat is counted in `series`).

Writes are batched apart from the controllers' own: what is recorded within `FLUSH_DELAY`
is committed in one `store.batch` (a failed batch is retried one Event at a time and a
failing Event is dropped, as client-go drops it), so Events never hold up a controller
write nor make its batch fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import socket
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from gitkrm.errors import GitkrmError, NotFound
from gitkrm.krm import Obj, ObjectRef
from gitkrm.krm.clock import WALL, Clock, stamp, stamp_micro
from gitkrm.store.protocol import BatchOp, BatchOpKind, Store

log = logging.getLogger(__name__)

FLUSH_DELAY = 0.5  # seconds an event may wait for others to share its commit
MAX_BATCH = 1000
CACHE_SIZE = 4096  # client-go's maxLruCacheEntries
FIELD_MANAGER = "gitkrm-controllers"


class EventKind(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class Style(StrEnum):
    """Which recorder writes it: client-go's core/v1 one (count, first/lastTimestamp) or
    the events.k8s.io one (eventTime, series)."""

    CORE = "core"
    SERIES = "series"


def involved(obj: Obj) -> dict[str, object]:
    """client-go's reference.GetReference of an object (its JSON field order)."""
    md = obj.get("metadata") or {}
    ref: dict[str, object] = {"kind": obj.get("kind")}
    if md.get("namespace"):
        ref["namespace"] = md["namespace"]
    ref["name"] = md.get("name")
    if md.get("uid"):
        ref["uid"] = md["uid"]
    ref["apiVersion"] = obj.get("apiVersion")
    if md.get("resourceVersion"):
        ref["resourceVersion"] = md["resourceVersion"]
    return ref


@dataclass
class _Entry:
    """One distinct event: its stored name, how often seen, and what is left to write."""

    namespace: str
    name: str
    body: Obj
    count: int = 1
    last: float = 0.0
    stored: bool = False  # created in the store
    dirty: bool = True  # has a change to write


class EventRecorder:
    """Correlates and batches the Events of every controller of one manager."""

    def __init__(
        self,
        *,
        store: Store,
        clock: Clock = WALL,
        ttl: float = 3600.0,
        enabled: bool = True,
        on_written: Callable[[Obj], None] | None = None,
    ) -> None:
        """`ttl`: how long a stored Event lives (0: for ever); `on_written`: told of every
        Event as the store wrote it."""
        self.store = store
        self.on_written = on_written
        self.clock = clock
        self.ttl = ttl if ttl > 0 else math.inf
        self.enabled = enabled
        self.host = socket.gethostname()
        self._cache: OrderedDict[tuple[object, ...], _Entry] = OrderedDict()
        self._dirty: dict[int, _Entry] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Task[None] | None = None
        self._last_nanos = 0
        self.written = 0  # Events created or updated in the store
        self.dropped = 0

    def sink(self, component: str, *, style: Style = Style.CORE) -> EventSink:
        return EventSink(self, component, style)

    # -- recording -------------------------------------------------------------------------

    def record(
        self,
        obj: Obj,
        *,
        kind: EventKind,
        reason: str,
        message: str,
        component: str,
        style: Style = Style.CORE,
        action: str = "",
        field_path: str = "",
        host: str = "",
    ) -> None:
        """`field_path`: the part of the object the Event is about (the kubelet's
        `spec.containers{web}`); `host`: the node of a node's component (the kubelet)."""
        if not self.enabled:
            return
        ref = involved(obj)
        if field_path:
            ref["fieldPath"] = field_path
        key: tuple[object, ...] = (
            component,
            style,
            ref.get("kind"),
            ref.get("namespace"),
            ref.get("name"),
        )
        key += (ref.get("uid"), ref.get("apiVersion"), field_path, kind, reason, message)
        now = self.clock.time()
        entry = self._cache.get(key)
        if entry is not None and now - entry.last < self.ttl:
            self._cache.move_to_end(key)
            entry.count += 1
            entry.last = now
            self._repeat(entry, style)
        else:
            entry = self._new(ref, now, kind, reason, message, component, style, action, host)
            self._cache[key] = entry
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        entry.dirty = True
        self._dirty[id(entry)] = entry
        self._schedule()

    def _nanos(self, now: float) -> int:
        """Nanoseconds for the name, unique within this recorder (a float clock repeats)."""
        nanos = max(int(now * 1e9), self._last_nanos + 1)
        self._last_nanos = nanos
        return nanos

    def _new(
        self,
        ref: dict[str, object],
        now: float,
        kind: EventKind,
        reason: str,
        message: str,
        component: str,
        style: Style,
        action: str,
        host: str = "",
    ) -> _Entry:
        namespace = str(ref.get("namespace") or "default")
        name = f"{ref.get('name')}.{self._nanos(now):x}"
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
        }
        if style is Style.CORE:
            t = stamp(self.clock)
            body["source"] = {"component": component, **({"host": host} if host else {})}
            body.update(firstTimestamp=t, lastTimestamp=t, count=1, type=str(kind))
            body.update(reportingComponent=component, reportingInstance=host)
        else:
            body.update(type=str(kind), eventTime=stamp_micro(self.clock), source={})
            if action:
                body["action"] = action
            body.update(reportingComponent=component, reportingInstance=f"{component}-{self.host}")
        return _Entry(namespace=namespace, name=name, body=body, last=now)

    def _repeat(self, entry: _Entry, style: Style) -> None:
        body = dict(entry.body)
        if style is Style.CORE:
            body.update(count=entry.count, lastTimestamp=stamp(self.clock))
        else:
            body["series"] = {"count": entry.count, "lastObservedTime": stamp_micro(self.clock)}
        entry.body = body

    # -- writing ---------------------------------------------------------------------------

    def _schedule(self) -> None:
        if self._timer is None and self._flushing is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(FLUSH_DELAY, self._start_flush)

    def _start_flush(self) -> None:
        self._timer = None
        self._flushing = asyncio.ensure_future(self.flush())

    async def flush(self) -> None:
        """Write what is recorded and not yet written."""
        try:
            while self._dirty:
                entries = list(self._dirty.values())[:MAX_BATCH]
                for e in entries:
                    del self._dirty[id(e)]
                    e.dirty = False
                await self._commit(entries)
        finally:
            self._flushing = None

    @staticmethod
    def _op(entry: _Entry) -> BatchOp:
        if not entry.stored:
            return BatchOp(op=BatchOpKind.CREATE, obj=entry.body)
        body = entry.body
        patch = {k: body[k] for k in ("count", "lastTimestamp", "series") if k in body}
        ref = ObjectRef(
            group="", kind="Event", name=entry.name, namespace=entry.namespace, version="v1"
        )
        return BatchOp(op=BatchOpKind.PATCH, ref=ref, patch=patch, patch_type="merge")

    async def _commit(self, entries: list[_Entry]) -> None:
        try:
            results = await self.store.batch(
                [self._op(e) for e in entries], field_manager=FIELD_MANAGER
            )
        except GitkrmError:
            for e in entries:
                await self._one(e)
        else:
            for e in entries:
                e.stored = True
            self.written += len(entries)
            self._tell(results)

    def _tell(self, results: list[Obj]) -> None:
        if self.on_written is not None:
            for r in results:
                self.on_written(r)

    async def _one(self, entry: _Entry) -> None:
        """One Event alone; a patch of an Event that expired meanwhile creates it again,
        as client-go's recordToSink does."""
        try:
            try:
                results = await self.store.batch([self._op(entry)], field_manager=FIELD_MANAGER)
            except NotFound:
                if not entry.stored:
                    raise
                entry.stored = False
                results = await self.store.batch([self._op(entry)], field_manager=FIELD_MANAGER)
        except GitkrmError as e:
            self.dropped += 1
            log.debug("event %s/%s not written: %s", entry.namespace, entry.name, e)
            entry.stored = True  # its next repeat patches (and recreates) it
            return
        entry.stored = True
        self.written += 1
        self._tell(results)

    async def write_now(self) -> None:
        """Write what is pending now, without waiting for the batch's delay."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._flushing is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._flushing
        await self.flush()

    async def stop(self) -> None:
        """Write what is pending (no more is recorded after)."""
        self.enabled = False
        await self.write_now()


class EventSink:
    """A controller's handle on the recorder, with its component name."""

    def __init__(self, recorder: EventRecorder, component: str, style: Style) -> None:
        self.recorder = recorder
        self.component = component
        self.style = style

    def event(
        self,
        obj: Obj,
        kind: EventKind,
        reason: str,
        message: str,
        *,
        action: str = "",
        field_path: str = "",
        host: str = "",
    ) -> None:
        self.recorder.record(
            obj,
            kind=kind,
            reason=reason,
            message=message,
            component=self.component,
            style=self.style,
            action=action,
            field_path=field_path,
            host=host,
        )

    def normal(self, obj: Obj, reason: str, message: str, **where: str) -> None:
        """A Normal Event; `where`: `event`'s action, field_path and host."""
        self.event(obj, EventKind.NORMAL, reason, message, **where)

    def warning(self, obj: Obj, reason: str, message: str, **where: str) -> None:
        self.event(obj, EventKind.WARNING, reason, message, **where)
