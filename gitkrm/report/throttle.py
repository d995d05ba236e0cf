"""At most one write per key (a commit's note, an agent's status file) every few seconds.

The first write of a key goes at once; later ones wait for the interval to pass since the
previous write, and whatever changed meanwhile goes in that one write. Keys not written
for longer than the interval are forgotten (they are ready anyway), so memory stays small.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

Clock = Callable[[], float]


class Throttle:
    def __init__(self, interval: float, *, clock: Clock = time.monotonic) -> None:
        if interval < 0:
            raise ValueError("a throttle interval cannot be negative")
        self.interval = interval
        self.clock = clock
        self._last: dict[Hashable, float] = {}

    def ready_at(self, key: Hashable) -> float:
        """The clock time from which `key` may be written (in the past: now)."""
        last = self._last.get(key)
        return float("-inf") if last is None else last + self.interval

    def ready(self, key: Hashable, now: float | None = None) -> bool:
        return (self.clock() if now is None else now) >= self.ready_at(key)

    def mark(self, key: Hashable, now: float | None = None) -> None:
        """`key` was written at `now`."""
        now = self.clock() if now is None else now
        self._last[key] = now
        if len(self._last) > 64:
            horizon = now - self.interval
            self._last = {k: t for k, t in self._last.items() if t > horizon}
