"""The long-lived agent hears at once when a declaring object is deleted (`kubectl delete` of
a Kustomization, an Application, a GitSource), through the agent's one watch cache: a
subscription per declaring kind, and a sync of the object's parent asked for, whose pass
then removes the child (`children.Tree`). Without it the removal would wait for the
parent's next interval.

The same watch follows the objects children's specs were read from (`ChildSpec.reads`: an
Argo CD AppProject): any change to one (created, edited, deleted) is told with the
object's resourceVersion, and the parents of the children that read it re-read them."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gitkrm.cache import WatchCache
from gitkrm.cache.watchcache import Subscription
from gitkrm.krm import GVK, Obj, ObjectRef, ResourceKey

ReadChanged = Callable[[ResourceKey, str | None], None]
"""(the object's versionless key, its resourceVersion now; None: gone)."""


class DeclaringWatch:
    """Calls `on_deleted(key)` when an object of a followed kind starts being deleted or
    is gone, and `on_read(key, resourceVersion)` when an object of a followed read kind
    changes."""

    def __init__(
        self,
        cache: WatchCache,
        on_deleted: Callable[[ResourceKey], None],
        on_read: ReadChanged | None = None,
    ) -> None:
        self._cache = cache
        self._on_deleted = on_deleted
        self._on_read = on_read
        self._subscriptions: dict[GVK, Subscription] = {}
        self._reads: dict[GVK, Subscription] = {}

    def follow(self, gvks: Iterable[GVK]) -> None:
        """Subscribe to the kinds not followed yet."""
        for gvk in gvks:
            if gvk not in self._subscriptions and gvk.version:
                self._subscriptions[gvk] = self._cache.subscribe(gvk, self._changed)

    def follow_reads(self, gvks: Iterable[GVK]) -> None:
        """Subscribe to the read kinds not followed yet."""
        for gvk in gvks:
            if gvk not in self._reads and gvk.version and self._on_read is not None:
                self._reads[gvk] = self._cache.subscribe(gvk, self._read)

    def _read(self, old: Obj | None, new: Obj | None) -> None:
        assert self._on_read is not None
        if new is not None:
            rv = (new.get("metadata") or {}).get("resourceVersion")
            self._on_read(ObjectRef.of(new).key, str(rv or ""))
        elif old is not None:
            self._on_read(ObjectRef.of(old).key, None)

    def _changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            if old is not None:
                self._on_deleted(ObjectRef.of(old).key)
            return
        deleting = bool((new.get("metadata") or {}).get("deletionTimestamp"))
        was = old is not None and bool((old.get("metadata") or {}).get("deletionTimestamp"))
        if deleting and not was:
            self._on_deleted(ObjectRef.of(new).key)

    async def close(self) -> None:
        subscriptions, self._subscriptions = self._subscriptions, {}
        reads, self._reads = self._reads, {}
        for subscription in [*subscriptions.values(), *reads.values()]:
            await subscription.close()
