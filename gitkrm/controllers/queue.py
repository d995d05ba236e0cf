"""A de-duplicating work queue with delayed adds and per-key exponential backoff.

client-go's workqueue semantics: a key is queued at most once; a key being processed that is
added again is queued once more when its processing is done, so one key is never worked on
by two workers at once. Delays are timers of the queue's clock (one per waiting key: the
event loop's on the wall clock), so an idle queue costs nothing, and a simulation's virtual
clock can jump to the next one.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from gitkrm.krm.clock import WALL, Clock, Timer

K = TypeVar("K", bound=Hashable)

BASE_DELAY = 0.005
MAX_DELAY = 60.0


class ShutDown(Exception):
    """The queue was shut down: workers stop."""


class WorkQueue(Generic[K]):
    def __init__(
        self, *, base_delay: float = BASE_DELAY, max_delay: float = MAX_DELAY, clock: Clock = WALL
    ) -> None:
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._timers: dict[K, Timer] = {}
        self._due: dict[K, float] = {}
        self._failures: dict[K, int] = {}
        self._base = base_delay
        self._max = max_delay
        self._shut = False
        self._clock = clock

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being processed (delayed keys may still wait)."""
        return not self._queue and not self._processing

    @property
    def delayed(self) -> int:
        return len(self._timers)

    def add(self, key: K) -> None:
        if self._shut or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return
        self._queue.append(key)
        self._wake()

    def add_after(self, key: K, delay: float) -> None:
        """Add `key` after `delay` seconds; an earlier pending add of the same key wins."""
        if self._shut:
            return
        if delay <= 0:
            self.add(key)
            return
        when = self._clock.time() + delay
        due = self._due.get(key)
        if due is not None and due <= when:
            return
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()
        self._due[key] = when
        self._timers[key] = self._clock.call_later(delay, functools.partial(self._fire, key))

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self._due.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: K) -> float:
        """Add after this key's backoff (5 ms doubling up to a minute); returns the delay."""
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        delay = float(min(self._max, self._base * (2**n)))
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """The key succeeded: its backoff starts over."""
        if self._failures:
            self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    def _wake(self) -> None:
        while self._waiters:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(None)
                return

    async def get_batch(self, limit: int) -> list[K]:
        """Up to `limit` keys (at least one: waits for it); each must be passed to done()."""
        while not self._queue:
            if self._shut:
                raise ShutDown
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled() and self._queue:
                    self._wake()  # pass the wake-up on to another worker
                raise
        out: list[K] = []
        while self._queue and len(out) < limit:
            key = self._queue.popleft()
            self._dirty.discard(key)
            self._processing.add(key)
            out.append(key)
        if self._queue:
            self._wake()
        return out

    async def get(self) -> K:
        return (await self.get_batch(1))[0]

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.append(key)
            self._wake()

    def shutdown(self) -> None:
        """Hand out no more keys (what is queued is dropped: the store keeps the state and
        a restart lists it again); keys being processed finish."""
        self._shut = True
        self._queue.clear()
        self._dirty.clear()
        for t in self._timers.values():
            t.cancel()
        self._timers.clear()
        self._due.clear()
        while self._waiters:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(None)
