"""Event expiry on the embedded store: kube-apiserver's `--event-ttl` (1 h by default).

Every `interval` (a twelfth of the TTL, at most 5 minutes) the store deletes the Events
last observed more than `event_ttl` ago, and the oldest beyond `event_limit`; it does so
with SQL over the stored JSON, so a sweep costs little even with tens of thousands of
Events. Stores without that ability (a cluster's API server expires its own) are left
alone. Timers run on the controllers' clock, so a simulation's virtual time expires
Events too.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol, runtime_checkable

from gitkrm.errors import GitkrmError
from gitkrm.krm.clock import WALL, Clock, Timer
from gitkrm.store.protocol import Store

log = logging.getLogger(__name__)

MAX_INTERVAL = 300.0


@runtime_checkable
class ExpiresEvents(Protocol):
    async def expire_events(self, *, now: float, ttl: float, limit: int) -> int: ...


class EventExpiry:
    def __init__(self, *, store: Store, ttl: float, limit: int, clock: Clock = WALL) -> None:
        self.store = store
        self.ttl = ttl
        self.limit = limit
        self.clock = clock
        self.interval = max(min(ttl / 12, MAX_INTERVAL), 0.01)
        self.expired = 0  # Events deleted so far
        self._timer: Timer | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if isinstance(self.store, ExpiresEvents) and self.ttl > 0:
            self._timer = self.clock.call_later(self.interval, self._due)

    def _due(self) -> None:
        self._timer = None
        self._task = asyncio.ensure_future(self._sweep_and_rearm())

    async def _sweep_and_rearm(self) -> None:
        await self.sweep()
        self._task = None
        self._timer = self.clock.call_later(self.interval, self._due)

    async def sweep(self) -> int:
        """Expire what is due now; returns how many Events went."""
        store = self.store
        if not isinstance(store, ExpiresEvents):
            return 0
        try:
            n = await store.expire_events(now=self.clock.time(), ttl=self.ttl, limit=self.limit)
        except GitkrmError as e:  # a closed or read-only store: try again next time
            log.debug("expiring events: %s", e)
            return 0
        self.expired += n
        return n

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
