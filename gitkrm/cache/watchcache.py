"""The one watch cache of a store: one list and one watch per kind and scope in use.

Every reader of live state subscribes here instead of running its own list-then-watch
loop: the bundled controllers (every kind, all namespaces), drift detection and the health
follower (a source's own objects: the scope of its label selector, shared by both), and
`wait_for` (`run --once --wait`). A kind and scope nobody holds is not cached: the last
release stops its informer and drops its objects (argoproj/gitops-engine's ClusterCache
keeps one cache per cluster in the same way).

`acquire`/`release` hold an informer (the controllers hold theirs for their whole life);
`subscribe` is acquire plus a handler, undone by `Subscription.close()`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gitkrm.krm import GVK, Obj
from gitkrm.store.protocol import Store

from .informer import EVERYTHING, Handler, Informer, Scope


@dataclass
class _Held:
    informer: Informer
    holders: int = 0


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Requests the cache made to the store: lists (first ones, and after Expired) and
    watches (first ones, and resumed after a dropped one), and the informers alive."""

    informers: int
    lists: int
    watches: int


@dataclass
class Subscription:
    """A handler on one informer; `close` removes it and releases the informer."""

    cache: WatchCache
    informer: Informer
    handler: Handler
    closed: bool = field(default=False)

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.informer.remove_handler(self.handler)
        await self.cache.release(self.informer)


class WatchCache:
    """See the module docstring."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._held: dict[tuple[str, str, Scope], _Held] = {}
        self._retired_lists = 0
        self._retired_watches = 0
        self.running = False

    # -- holding informers ---------------------------------------------------------------

    def acquire(self, gvk: GVK, scope: Scope = EVERYTHING) -> Informer:
        """The informer of a kind in a scope (made, and started when the cache runs, on
        first use); held until as many `release` calls."""
        key = (gvk.group, gvk.kind, scope)
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = _Held(Informer(self.store, gvk, scope))
            if self.running:
                held.informer.start()
        held.holders += 1
        return held.informer

    async def release(self, informer: Informer) -> None:
        key = (informer.gvk.group, informer.gvk.kind, informer.scope)
        held = self._held.get(key)
        if held is None or held.informer is not informer:
            return
        held.holders -= 1
        if held.holders <= 0:
            del self._held[key]
            self._retired_lists += informer.lists
            self._retired_watches += informer.watches
            await informer.stop()
            informer.forget()

    def subscribe(self, gvk: GVK, handler: Handler, scope: Scope = EVERYTHING) -> Subscription:
        """Hear of every change of a kind in a scope (first of what is cached already)."""
        informer = self.acquire(gvk, scope)
        informer.add_handler(handler)
        return Subscription(self, informer, handler)

    # -- reads ---------------------------------------------------------------------------

    def find(self, group: str, kind: str, scope: Scope = EVERYTHING) -> Informer | None:
        held = self._held.get((group, kind, scope))
        return held.informer if held is not None else None

    def for_object(self, obj: Obj) -> Informer | None:
        """The all-namespaces informer of an object's kind (its apiVersion's group)."""
        api_version = obj.get("apiVersion")
        group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
        return self.find(group, str(obj.get("kind")))

    def all(self) -> list[Informer]:
        return [h.informer for h in self._held.values()]

    def stats(self) -> CacheStats:
        informers = self.all()
        return CacheStats(
            informers=len(informers),
            lists=self._retired_lists + sum(i.lists for i in informers),
            watches=self._retired_watches + sum(i.watches for i in informers),
        )

    # -- running -------------------------------------------------------------------------

    def start(self) -> None:
        """Start every informer held, and any acquired from now on."""
        self.running = True
        for held in self._held.values():
            held.informer.start()

    async def wait_synced(self, informers: Iterable[Informer] | None = None) -> None:
        for inf in list(informers if informers is not None else self.all()):
            await inf.synced.wait()

    async def stop(self) -> None:
        """Stop every informer (the cache may be started again; holders keep theirs)."""
        self.running = False
        for inf in self.all():
            await inf.stop()


class Holder:
    """One consumer's informers on a cache, one per kind (in the holder's scope), held
    until `release_all` (the controllers hold theirs while they run)."""

    def __init__(self, cache: WatchCache, scope: Scope = EVERYTHING) -> None:
        self.cache = cache
        self.scope = scope
        self._mine: dict[tuple[str, str], Informer] = {}

    def get(self, gvk: GVK) -> Informer:
        key = (gvk.group, gvk.kind)
        inf = self._mine.get(key)
        if inf is None:
            inf = self._mine[key] = self.cache.acquire(gvk, self.scope)
        return inf

    def find(self, group: str, kind: str) -> Informer | None:
        return self._mine.get((group, kind))

    def for_object(self, obj: Obj) -> Informer | None:
        """The held informer of an object's kind (its apiVersion's group and its kind)."""
        api_version = obj.get("apiVersion")
        group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
        return self._mine.get((group, str(obj.get("kind"))))

    def all(self) -> list[Informer]:
        return list(self._mine.values())

    async def release_all(self) -> None:
        mine, self._mine = self._mine, {}
        for inf in mine.values():
            await self.cache.release(inf)
