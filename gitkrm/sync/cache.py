"""A cache of render results that forgets what recent renders did not use.

Entries are stamped with the render that last used them; at the end of a render, entries
unused by it and by the one before are dropped (a `git revert` finds the previous
revision's blobs still parsed). The sweep runs only when stale entries make up a good
part of the cache, so a render that changes one file of 5,000 costs nothing here.
"""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class GenerationCache(Generic[K, V]):
    """Entries used in this render or the one before; older ones are dropped (swept only
    when they make up a good part of the cache, so a quiet render costs nothing)."""

    def __init__(self) -> None:
        self._entries: dict[K, tuple[int, V]] = {}
        self._generation = 0
        self._used = 0

    def get(self, key: K) -> V | None:
        hit = self._entries.get(key)
        if hit is None:
            return None
        if hit[0] != self._generation:
            self._entries[key] = (self._generation, hit[1])
            self._used += 1
        return hit[1]

    def put(self, key: K, value: V) -> None:
        if self._entries.get(key, (-1,))[0] != self._generation:
            self._used += 1
        self._entries[key] = (self._generation, value)

    def rotate(self) -> None:
        """End of a render: forget what neither this render nor the one before used."""
        if len(self._entries) > 2 * self._used + 64:
            oldest = self._generation - 1
            self._entries = {k: v for k, v in self._entries.items() if v[0] >= oldest}
        self._generation += 1
        self._used = 0

    def __len__(self) -> int:
        return len(self._entries)
