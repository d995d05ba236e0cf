"""Times as Kubernetes writes them: metav1.Time (RFC 3339, seconds, `Z`) and MicroTime,
and the one clock the controllers read and set their timers on.

One place for "now" and for reading a timestamp back, so that every object gitkrm writes
(store metadata, conditions, notes) spells time the same way. `Clock` is what a controller
is given: `WALL` (the default: the wall clock and the event loop's timers, production) or
a `VirtualClock`, whose time moves only when it is advanced to its next timer: the
simulation (`gitkrm plan --simulate`) runs fifteen minutes of controllers in seconds.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

_last_second = -1
_last_stamp = ""


def rfc3339(t: datetime) -> str:
    """`2024-01-02T03:04:05Z`: metav1.Time (seconds precision, UTC)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339() -> str:
    """Now as metav1.Time, formatted once per second (a batch of 10,000 creates shares it)."""
    global _last_second, _last_stamp
    second = int(time.time())
    if second != _last_second:
        _last_stamp = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _last_second = second
    return _last_stamp


def now_micro() -> str:
    """Now as metav1.MicroTime (a Lease's renewTime)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 timestamp (aware, UTC when it names no zone); None when absent or
    malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def parse_timestamp(value: object) -> float | None:
    """An RFC 3339 timestamp as seconds since the epoch (None when absent or malformed)."""
    parsed = parse_time(value)
    return parsed.timestamp() if parsed is not None else None


class Timer(Protocol):
    """A callback a clock will call (`cancel` it to not)."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """What the controllers read time from and set their timers on."""

    def time(self) -> float:
        """Seconds since the epoch."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Call `callback` (in the event loop) once `delay` seconds of this clock passed."""
        ...


class WallClock:
    """The wall clock and the running event loop's timers."""

    __slots__ = ()

    def time(self) -> float:
        return time.time()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(delay, callback)


WALL = WallClock()


class _VirtualTimer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock:
    """Simulated time (discrete events): it stands still until `advance` moves it to the
    next timer due and calls that timer, so the driver decides when time passes (when
    the controllers have nothing left to do but wait)."""

    def __init__(self, start: float | None = None) -> None:
        self._now = time.time() if start is None else start
        self._timers: list[tuple[float, int, _VirtualTimer]] = []
        self._seq = itertools.count()

    def time(self) -> float:
        return self._now

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = _VirtualTimer(self._now + max(0.0, delay), callback)
        heapq.heappush(self._timers, (timer.when, next(self._seq), timer))
        return timer

    def next_due(self) -> float | None:
        """When the next timer is due (None: no timer is set)."""
        timers = self._timers
        while timers and timers[0][2].cancelled:
            heapq.heappop(timers)
        return timers[0][0] if timers else None

    def advance(self, until: float) -> int:
        """Move time to `until` (never back), calling every timer due by then in order of
        their times (time reads each one's); returns how many were called."""
        called = 0
        timers = self._timers
        while timers and timers[0][0] <= until:
            when, _, timer = heapq.heappop(timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.callback()
            called += 1
        self._now = max(self._now, until)
        return called


def format_seconds(seconds: float) -> str:
    """Seconds since the epoch as metav1.Time."""
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stamp(clock: Clock) -> str:
    """`clock`'s now as metav1.Time (the wall clock's formatted once per second)."""
    if clock is WALL:
        return now_rfc3339()
    return format_seconds(clock.time())


def stamp_micro(clock: Clock) -> str:
    """`clock`'s now as metav1.MicroTime."""
    return datetime.fromtimestamp(clock.time(), UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_of(clock: Clock) -> datetime:
    """`clock`'s now as an aware datetime (UTC)."""
    return datetime.fromtimestamp(clock.time(), UTC)
