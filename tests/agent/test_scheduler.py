"""Workers run one sync at a time and coalesce requests; apscheduler ticks them."""

from __future__ import annotations

import asyncio

from gitkrm.agent.scheduler import Scheduler, SourceWorker, Trigger
from tests.agent.agent_waits import wait_until


class Recorder:
    def __init__(self) -> None:
        self.calls: list[frozenset[Trigger]] = []
        self.running = 0
        self.max_running = 0
        self.gate = asyncio.Event()
        self.gate.set()
        self.entered = asyncio.Event()
        self.fail_next = False

    async def __call__(self, triggers: frozenset[Trigger]) -> None:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.calls.append(triggers)
        self.entered.set()
        try:
            await self.gate.wait()
            if self.fail_next:
                self.fail_next = False
                raise RuntimeError("boom")
        finally:
            self.running -= 1


async def _held_in_its_first_sync() -> tuple[Recorder, SourceWorker]:
    """A started worker whose first sync has begun and waits at the recorder's gate."""
    rec = Recorder()
    rec.gate.clear()
    w = SourceWorker("s", rec)
    w.start()
    w.request(Trigger.START)
    await asyncio.wait_for(rec.entered.wait(), 5)
    return rec, w


async def test_requests_during_a_sync_coalesce_into_one_more() -> None:
    rec, w = await _held_in_its_first_sync()
    assert w.busy
    for t in (Trigger.INTERVAL, Trigger.CHANGE, Trigger.INTERVAL, Trigger.REQUEST):
        w.request(t)
    rec.gate.set()
    await wait_until(lambda: w.runs == 2 and not w.busy, what="two runs")
    assert rec.calls == [
        frozenset({Trigger.START}),
        frozenset({Trigger.INTERVAL, Trigger.CHANGE, Trigger.REQUEST}),
    ]
    assert rec.max_running == 1
    assert await w.stop(grace=1)


async def test_a_crashing_sync_does_not_stop_the_worker() -> None:
    rec = Recorder()
    rec.fail_next = True
    w = SourceWorker("s", rec)
    w.start()
    w.request(Trigger.START)
    await wait_until(lambda: w.runs == 1, what="the failing run")
    w.request(Trigger.INTERVAL)
    await wait_until(lambda: w.runs == 2, what="the next run")
    assert len(rec.calls) == 2
    await w.stop(grace=1)


async def test_stop_lets_the_running_sync_finish() -> None:
    rec, w = await _held_in_its_first_sync()
    stopping = asyncio.create_task(w.stop(grace=10))
    await asyncio.sleep(0)
    w.request(Trigger.INTERVAL)  # refused: the worker is stopping
    assert not stopping.done()
    rec.gate.set()
    assert await asyncio.wait_for(stopping, 5) is True
    assert len(rec.calls) == 1


async def test_stop_cancels_after_the_grace_period() -> None:
    rec, w = await _held_in_its_first_sync()
    assert await w.stop(grace=0.05) is False
    assert rec.running == 0


async def test_scheduler_ticks_each_worker_at_its_interval() -> None:
    fast, slow = Recorder(), Recorder()
    wf, ws = SourceWorker("fast", fast), SourceWorker("slow", slow)
    sched = Scheduler()
    for w, interval in ((wf, 0.05), (ws, 3600.0)):
        sched.add(w, interval=interval)
        w.start()
    sched.start()
    try:
        await wait_until(lambda: len(fast.calls) >= 3, what="three ticks")
        assert all(c == frozenset({Trigger.INTERVAL}) for c in fast.calls)
        assert slow.calls == []
        before = sched.next_tick("slow")
        sched.reschedule("slow", interval=0.05)
        after = sched.next_tick("slow")
        assert before is not None
        assert after is not None
        assert after < before
        await wait_until(lambda: len(slow.calls) >= 1, what="the rescheduled tick")
    finally:
        sched.shutdown()
        await wf.stop(grace=1)
        await ws.stop(grace=1)
