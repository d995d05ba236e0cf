"""When syncs run: apscheduler's interval ticks (with jitter) feed one worker per source.

A tick, a local change, an edit of the GitSource or a request annotation only *asks* for
a sync. Each source's worker runs one sync at a time; everything asked while a sync runs
is coalesced into one more sync afterwards (the reasons are kept for the log). So two
syncs of one source never overlap, a burst of requests costs one sync, and a request made
mid-sync is never lost (apscheduler alone would drop a tick while a run is in progress).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler
    from apscheduler.triggers.interval import IntervalTrigger

log = logging.getLogger("gitkrm.scheduler")

JITTER = 0.1
"""Ticks are spread by up to this fraction of the interval, so sources don't fire together."""


class Trigger(StrEnum):
    START = "start"
    INTERVAL = "interval"
    CHANGE = "change"
    REQUEST = "request"
    SPEC = "spec"
    RETRY = "retry"  # a failed sync's retryInterval


Reconcile = Callable[[frozenset[Trigger]], Awaitable[None]]


class SourceWorker:
    """Runs one source's syncs one at a time; see the module docstring."""

    def __init__(self, name: str, reconcile: Reconcile) -> None:
        self.name = name
        self._reconcile = reconcile
        self._wake = asyncio.Event()
        self._pending: set[Trigger] = set()
        self._stopping = False
        self._busy = False
        self._task: asyncio.Task[None] | None = None
        self.runs = 0

    @property
    def busy(self) -> bool:
        return self._busy

    def request(self, trigger: Trigger) -> None:
        if self._stopping:
            return
        self._pending.add(trigger)
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name=f"gitkrm-source-{self.name}")

    async def _loop(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            if self._stopping:
                break
            triggers = frozenset(self._pending)
            self._pending.clear()
            self._busy = True
            try:
                await self._reconcile(triggers)
            except asyncio.CancelledError:
                raise
            except Exception:
                # The reconcile reports its own errors; this is a bug, and the agent lives on.
                log.exception("sync of source %s crashed", self.name)
            finally:
                self._busy = False
                self.runs += 1

    async def stop(self, *, grace: float) -> bool:
        """Take no more requests; let a running sync finish (up to `grace` seconds, then
        cancel it). True when it finished on its own."""
        self._stopping = True
        self._wake.set()
        task = self._task
        if task is None:
            return True
        done, _ = await asyncio.wait({task}, timeout=grace)
        if done:
            return True
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return False

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()


class Scheduler:
    """apscheduler's AsyncIOScheduler ticking each worker at its interval (plus jitter).

    Jobs are coalesced (missed ticks fire once), run late rather than never, and at most one
    instance runs: the job only calls `request`, which returns at once.
    """

    def __init__(self) -> None:
        self._scheduler: AsyncIOScheduler | None = None
        self._workers: dict[str, SourceWorker] = {}

    @property
    def _aps(self) -> AsyncIOScheduler:
        """apscheduler, loaded with the first job (`run --once` schedules none)."""
        if self._scheduler is None:
            from apscheduler.schedulers.asyncio import AsyncIOScheduler

            self._scheduler = AsyncIOScheduler(timezone=dt.UTC)
        return self._scheduler

    def add(self, worker: SourceWorker, *, interval: float) -> None:
        self._workers[worker.name] = worker
        self._aps.add_job(
            self._tick,
            trigger=self._trigger(interval),
            args=(worker.name,),
            id=worker.name,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=None,
            replace_existing=True,
        )

    def remove(self, name: str) -> None:
        """Stop ticking a worker (a child source removed)."""
        self._workers.pop(name, None)
        if self._scheduler is not None and self._aps.get_job(name) is not None:
            self._aps.remove_job(name)

    def reschedule(self, name: str, *, interval: float) -> None:
        self._aps.reschedule_job(name, trigger=self._trigger(interval))

    def next_tick(self, name: str) -> dt.datetime | None:
        job = self._aps.get_job(name)
        return None if job is None else job.next_run_time

    @staticmethod
    def _trigger(interval: float) -> IntervalTrigger:
        from apscheduler.triggers.interval import IntervalTrigger

        return IntervalTrigger(seconds=interval, jitter=interval * JITTER, timezone=dt.UTC)

    async def _tick(self, name: str) -> None:
        worker = self._workers.get(name)
        if worker is not None:
            worker.request(Trigger.INTERVAL)

    def start(self) -> None:
        self._aps.start()

    def shutdown(self) -> None:
        if self._scheduler is not None and self._scheduler.running:
            self._scheduler.shutdown(wait=False)
