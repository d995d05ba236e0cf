"""What both targets own alike: the open store and its one watch cache.

`EmbeddedTarget` and `ClusterTarget` (`gitkrm.agent.targets`) differ in what they run
around the store; opening it, handing it out, and closing the cache before the store are
the same, and written here once.
"""

from __future__ import annotations

from gitkrm.cache import WatchCache
from gitkrm.store import Store, open_store


class StoreOwner:
    """A store opened by `_open_store` and closed (its cache first) by `_close_store`;
    `store` and `cache` raise RuntimeError in between."""

    def __init__(self) -> None:
        self._store: Store | None = None
        self._cache: WatchCache | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("the agent is not open")
        return self._store

    @property
    def cache(self) -> WatchCache:
        if self._cache is None:
            raise RuntimeError("the agent is not open")
        return self._cache

    @property
    def is_open(self) -> bool:
        return self._store is not None

    async def _open_store(self, url: str) -> Store:
        self._store = await open_store(url)
        self._cache = WatchCache(self._store)
        return self._store

    async def _close_store(self) -> None:
        cache, self._cache = self._cache, None
        if cache is not None:
            await cache.stop()
        store, self._store = self._store, None
        if store is not None:
            await store.close()
