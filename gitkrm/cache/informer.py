"""Informers: list then watch one kind in one scope, keep a local cache, tell handlers.

A scope is all namespaces or one, with an optional label selector (a source's own objects:
`gitkrm.io/source=<name>`). Each informer resumes its watch from the last resourceVersion
it saw, and lists again when the store answers Expired (history compacted). A kind the
store does not serve (a CRD not there yet) is an empty, synced cache that keeps trying.

Readers decide from the cache, never the store; writers record what a write returned here
at once (`observe`: "read your writes"), so a reconcile that runs before the watch
delivers the event still sees its own change. Handlers hear only of watched changes, with
the old state the watch last delivered.

Objects in the cache are shared (with the store's watch hub and every subscriber): they
are never modified in place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gitkrm.errors import Expired, GitkrmError, NotFound
from gitkrm.krm import GVK, Obj
from gitkrm.store.protocol import EventType, Store

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace or "", name)
Handler = Callable[[Obj | None, Obj | None], None]  # (old, new): add (None, o), delete (o, None)
IndexFn = Callable[[Obj], Iterable[str]]

NAMESPACE_INDEX = "namespace"
RETRY_DELAY = 1.0
MAX_RETRY_DELAY = 30.0


def key_of(obj: Obj) -> Key:
    md = obj["metadata"]
    return (md.get("namespace") or "", md["name"])


def rv_of(obj: Obj) -> int:
    """The resourceVersion as a number (the embedded store's are; 0 when it is not)."""
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def slim(obj: Obj) -> Obj:
    """An object as the cache keeps it: without `metadata.managedFields` (no reader of
    the cache needs them; they are about half of a stored object, and decoded into many
    small dicts they were most of the cache's memory). A write that sends a cached
    object back leaves the stored managedFields as they are (nil keeps them)."""
    md = obj.get("metadata")
    if md is None or "managedFields" not in md:
        return obj
    return {**obj, "metadata": {k: v for k, v in md.items() if k != "managedFields"}}


def _namespace_index(obj: Obj) -> Iterable[str]:
    return (obj["metadata"].get("namespace") or "",)


@dataclass(frozen=True, slots=True)
class Scope:
    """Which objects of a kind an informer holds: one namespace or all (None), and those
    matching a label selector (None: all)."""

    namespace: str | None = None
    label_selector: str | None = None


EVERYTHING = Scope()


class Informer:
    """The cache of one kind in one scope, fed by list + watch."""

    def __init__(self, store: Store, gvk: GVK, scope: Scope = EVERYTHING) -> None:
        self.store = store
        self.gvk = gvk
        self.scope = scope
        self.synced = asyncio.Event()
        self.served: bool | None = None  # None until the first list answered
        self.rv: str | None = None
        self._items: dict[Key, Obj] = {}
        self._watched: dict[Key, Obj] = {}
        self._tombstones: dict[Key, int] = {}
        self._handlers: list[Handler] = []
        self._list_listeners: list[Callable[[], None]] = []
        self._listeners: list[Handler] = []
        self._indexers: dict[str, IndexFn] = {}
        self._indexes: dict[str, dict[str, set[Key]]] = {}
        self._task: asyncio.Task[None] | None = None
        self.watching = False  # a watch is open (set while it runs)
        self.lists = 0  # lists made (the first, and one after each Expired)
        self.watches = 0  # watches started (resumed after a busy store dropped one)
        self.add_index(NAMESPACE_INDEX, _namespace_index)

    # -- reads ---------------------------------------------------------------------------

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self._items.get((namespace or "", name))

    def get_key(self, key: Key) -> Obj | None:
        return self._items.get(key)

    @property
    def trusted(self) -> bool:
        """Listed, served and following its watch: the cache is the store's state (up to
        events in flight)."""
        return self.synced.is_set() and self.served is True and self.watching

    def __len__(self) -> int:
        return len(self._items)

    def keys(self) -> list[Key]:
        return list(self._items)

    def items(self) -> list[Obj]:
        return list(self._items.values())

    def objects(self, namespace: str | None = None) -> list[Obj]:
        if namespace is None:
            return list(self._items.values())
        return self.by_index(NAMESPACE_INDEX, namespace)

    def by_index(self, index: str, value: str) -> list[Obj]:
        keys = self._indexes[index].get(value)
        if not keys:
            return []
        items = self._items
        return [items[k] for k in keys]

    def index_keys(self, index: str, value: str) -> set[Key]:
        return set(self._indexes[index].get(value) or ())

    # -- registration ----------------------------------------------------------------------

    def add_handler(self, handler: Handler) -> None:
        """Hear of every watched change; added late, it first hears of what is cached."""
        self._handlers.append(handler)
        for obj in list(self._watched.values()):
            handler(None, obj)

    def add_list_listener(self, listener: Callable[[], None]) -> None:
        """Be called after every list (the first, after Expired, while not served), once the
        cache holds what it found; at once if the cache is synced already."""
        self._list_listeners.append(listener)
        if self.synced.is_set():
            listener()

    def remove_list_listener(self, listener: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):
            self._list_listeners.remove(listener)

    def remove_handler(self, handler: Handler) -> None:
        with contextlib.suppress(ValueError):
            self._handlers.remove(handler)

    def add_listener(self, listener: Handler) -> None:
        """Hear of every change of the cached view (watched or written through)."""
        self._listeners.append(listener)
        for obj in list(self._items.values()):
            listener(None, obj)

    def add_index(self, name: str, fn: IndexFn) -> None:
        if name in self._indexers:
            return
        self._indexers[name] = fn
        index: dict[str, set[Key]] = {}
        for k, obj in self._items.items():
            for v in fn(obj):
                index.setdefault(v, set()).add(k)
        self._indexes[name] = index

    # -- the cached view -------------------------------------------------------------------

    def _set(self, key: Key, obj: Obj) -> None:
        old = self._items.get(key)
        self._items[key] = obj
        for name, fn in self._indexers.items():
            index = self._indexes[name]
            after = fn(obj)
            if old is not None:
                before = fn(old)
                if before == after:
                    continue
                for v in before:
                    s = index.get(v)
                    if s is not None:
                        s.discard(key)
                        if not s:
                            del index[v]
            for v in after:
                found = index.get(v)
                if found is None:
                    index[v] = {key}
                else:
                    found.add(key)
        for listener in self._listeners:
            listener(old, obj)

    def _remove(self, key: Key) -> None:
        old = self._items.pop(key, None)
        if old is None:
            return
        for name, fn in self._indexers.items():
            index = self._indexes[name]
            for v in fn(old):
                s = index.get(v)
                if s is not None:
                    s.discard(key)
                    if not s:
                        del index[v]
        for listener in self._listeners:
            listener(old, None)

    def observe(self, obj: Obj) -> None:
        """Record an object a write returned (newer than the cache: it replaces it)."""
        obj = slim(obj)
        key, rv = key_of(obj), rv_of(obj)
        tomb = self._tombstones.get(key)
        if tomb is not None:
            if rv <= tomb:
                return
            del self._tombstones[key]
        cur = self._items.get(key)
        if cur is not None and rv_of(cur) >= rv:
            return
        self._set(key, obj)

    def observe_deleted(self, obj: Obj) -> None:
        """Record that a write removed an object (its final state carries the deletion's
        resourceVersion): older watch events will not bring it back."""
        key, rv = key_of(obj), rv_of(obj)
        cur = self._items.get(key)
        if cur is not None and rv_of(cur) > rv:
            return
        self._tombstones[key] = rv
        self._remove(key)

    # -- watch events ----------------------------------------------------------------------

    def _apply(self, etype: EventType, obj: Obj, *, at: int | None = None) -> None:
        obj = slim(obj)
        key = key_of(obj)
        rv = rv_of(obj) if at is None else at
        if etype is EventType.DELETED:
            old = self._watched.pop(key, None)
            tomb = self._tombstones.get(key)
            if tomb is not None and tomb <= rv:
                del self._tombstones[key]
            cur = self._items.get(key)
            if cur is not None and rv_of(cur) <= rv:
                self._remove(key)
            self._notify(old if old is not None else obj, None, final=obj)
            return
        old = self._watched.get(key)
        self._watched[key] = obj
        tomb = self._tombstones.get(key)
        if tomb is not None and rv > tomb:
            del self._tombstones[key]
            tomb = None
        if tomb is None:
            cur = self._items.get(key)
            if cur is None or rv_of(cur) < rv:
                self._set(key, obj)
        self._notify(old, obj)

    def _notify(self, old: Obj | None, new: Obj | None, *, final: Obj | None = None) -> None:
        if new is None and final is not None:
            old = final  # a deletion: handlers get the object's last state
        for handler in self._handlers:
            try:
                handler(old, new)
            except Exception:
                log.exception("handler of %s failed", self.gvk.kind)

    async def _relist(self) -> None:
        self.lists += 1
        scope = self.scope
        try:
            listed = await self.store.list(
                self.gvk, scope.namespace, label_selector=scope.label_selector
            )
        except NotFound:
            # Not served (its CRD is not there, or went away): nothing of it exists.
            self.served = False
            for key in list(self._watched):
                self._apply(EventType.DELETED, self._watched[key], at=None)
            self._listed()
            raise
        self.served = True
        rv = str((listed.get("metadata") or {}).get("resourceVersion") or "")
        at = int(rv) if rv.isdigit() else None
        seen: set[Key] = set()
        for obj in listed.get("items") or ():
            key = key_of(obj)
            seen.add(key)
            old = self._watched.get(key)
            if old is None:
                self._apply(EventType.ADDED, obj)
            elif rv_of(old) != rv_of(obj):
                self._apply(EventType.MODIFIED, obj)
        for key in [k for k in self._watched if k not in seen]:
            self._apply(EventType.DELETED, self._watched[key], at=at)
        self.rv = rv or None
        self._listed()

    def _listed(self) -> None:
        self.synced.set()
        for listener in list(self._list_listeners):
            try:
                listener()
            except Exception:
                log.exception("list listener of %s failed", self.gvk.kind)

    # -- running ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=f"informer {self.gvk.kind}")

    def forget(self) -> None:
        """Drop everything cached (the informer was released for good): what it held is
        freed even while something still refers to the informer itself."""
        self._items.clear()
        self._watched.clear()
        self._tombstones.clear()
        for index in self._indexes.values():
            index.clear()
        self._handlers.clear()
        self._listeners.clear()
        self._list_listeners.clear()
        self.rv = None
        self.synced.clear()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def run(self) -> None:
        delay = RETRY_DELAY
        while True:
            try:
                if self.rv is None:
                    await self._relist()
                heard = await self._watch()
                if heard:
                    delay = RETRY_DELAY
                    continue
            except Expired:
                self.rv = None
                continue
            except NotFound as e:  # the kind is not served (yet, or any more): its CRD
                log.debug("%s not served: %s", self.gvk, e)
                self.rv = None  # list again: an empty cache until it is served
                await asyncio.sleep(RETRY_DELAY)
                continue
            except GitkrmError as e:
                log.warning("watch of %s failed: %s", self.gvk, e)
            await asyncio.sleep(delay)
            delay = min(MAX_RETRY_DELAY, delay * 2)

    async def _watch(self) -> bool:
        """Follow the watch until it ends (dropped by a busy store); True if it said
        anything."""
        heard = False
        self.watches += 1
        scope = self.scope
        watch: Any = self.store.watch(
            self.gvk,
            scope.namespace,
            resource_version=self.rv,
            label_selector=scope.label_selector,
            allow_bookmarks=True,
        )
        self.watching = True
        try:
            async for ev in watch:
                heard = True
                etype = ev.type
                obj = ev.obj
                if etype is EventType.BOOKMARK:
                    self.rv = obj["metadata"].get("resourceVersion") or self.rv
                    continue
                if etype is EventType.ERROR:
                    raise Expired(str(obj.get("message") or "watch error"))
                self._apply(etype, obj)
                self.rv = obj["metadata"].get("resourceVersion") or self.rv
        finally:
            self.watching = False
            aclose = getattr(watch, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        return heard
