"""The long-lived agent hears at once when a declaring object is deleted (`kubectl delete` of
a Kustomization, an Application, a GitSource), through the agent's one watch cache: a
subscription per declaring kind, and a sync of the object's parent asked for, whose pass
then removes the child (`children.Tree`). Without it the removal would wait for the
parent's next interval."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gitkrm.cache import WatchCache
from gitkrm.cache.watchcache import Subscription
from gitkrm.krm import GVK, Obj, ObjectRef, ResourceKey


class DeclaringWatch:
    """Calls `on_deleted(key)` when an object of a followed kind starts being deleted or
    is gone."""

    def __init__(self, cache: WatchCache, on_deleted: Callable[[ResourceKey], None]) -> None:
        self._cache = cache
        self._on_deleted = on_deleted
        self._subscriptions: dict[GVK, Subscription] = {}

    def follow(self, gvks: Iterable[GVK]) -> None:
        """Subscribe to the kinds not followed yet."""
        for gvk in gvks:
            if gvk not in self._subscriptions and gvk.version:
                self._subscriptions[gvk] = self._cache.subscribe(gvk, self._changed)

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
        for subscription in subscriptions.values():
            await subscription.close()
