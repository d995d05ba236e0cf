"""Simulated time on the twin: the controllers run on a `VirtualClock`, which moves only
when they have nothing left to do but wait (discrete-event simulation).

`Driver.run` watches the twin: while a controller has work queued or in hand, or the
store's revision moved in the last few polls, time stands still; once the twin is quiet,
the clock jumps to the next timer due (a pod's start-up delay, a requeue for a progress
deadline, a CronJob's next schedule, a crash-loop back-off) and calls it, which queues
work again. So `--for 15m` simulates fifteen minutes in the wall time the controllers need
for the work those minutes bring, and a Deployment whose pods never become ready reaches
its progressDeadlineSeconds. Timers due after the end of the window are never called.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Final

from gitkrm.controllers import ControllerManager
from gitkrm.krm.clock import VirtualClock
from gitkrm.store import Store
from gitkrm.sync import live

POLL: Final = 0.002  # wall seconds between looks at the twin
QUIET_POLLS: Final = 3  # looks with nothing queued and no write: the twin is idle
SETTLE_QUIET: Final = 5.0  # simulated seconds without a write before the end: settled


class Outcome(StrEnum):
    DONE = "done"  # the task run beside the driver finished
    SETTLED = "settled"  # idle at the window's end, no write in its last SETTLE_QUIET
    ENDED = "ended"  # the window ended shortly after the twin's last write
    WINDOW = "window"  # the task waits on what no timer within the window brings
    WALL = "wall"  # the wall-time limit passed first


def _always() -> bool:
    return True


class Driver:
    """Moves the twin's clock: to `end` (seconds since the epoch, the clock's) at most,
    until the wall clock's `perf_counter` reads `wall_deadline`."""

    def __init__(
        self,
        *,
        clock: VirtualClock,
        store: Store,
        manager: ControllerManager,
        end: float,
        wall_deadline: float,
    ) -> None:
        self.clock = clock
        self.store = store
        self.manager = manager
        self.end = end
        self.wall_deadline = wall_deadline
        self.jumps = 0
        self.last_change = clock.time()  # the clock when the twin last did anything

    async def run(
        self,
        *,
        task: asyncio.Future[Any] | None = None,
        may_advance: Callable[[], bool] = _always,
    ) -> Outcome:
        """Drive until `task` is done (when given), the twin is idle with no timer due
        within the window (the clock is then at the window's end: SETTLED when nothing was
        written in its last SETTLE_QUIET seconds, ENDED otherwise; WINDOW when a `task` is
        still waiting), or the wall limit. `may_advance`: whether time may
        pass now (a sync waiting on health: yes; a sync rendering or applying: no, its
        writes take no simulated time)."""
        last = ""
        quiet = 0
        while True:
            if task is not None and task.done():
                return Outcome.DONE
            if time.perf_counter() >= self.wall_deadline:
                return Outcome.WALL
            rv = await live.current_revision(self.store)
            if rv != last or not self.manager.idle():
                if rv != last:
                    self.last_change = self.clock.time()
                last, quiet = rv, 0
            else:
                quiet += 1
            if quiet >= QUIET_POLLS and may_advance():
                due = self.clock.next_due()
                if due is None or due > self.end:
                    self.clock.advance(self.end)
                    if task is not None:
                        return Outcome.WINDOW
                    quiet_for = self.end - self.last_change
                    return Outcome.SETTLED if quiet_for >= SETTLE_QUIET else Outcome.ENDED
                else:
                    self.clock.advance(due)
                    self.jumps += 1
                    quiet = 0
                    await asyncio.sleep(0)
                    continue
            await asyncio.sleep(POLL)
