"""SIGTERM/SIGINT: the first asks for a graceful stop, the second forces it."""

from __future__ import annotations

import asyncio
import os
import signal

from gitkrm.agent.shutdown import Shutdown, wait_or_force


async def test_first_signal_requests_second_forces() -> None:
    sd = Shutdown()
    sd.install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(sd.requested.wait(), 5)
        assert sd.signal_name == "SIGTERM"
        assert not sd.forced.is_set()
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.wait_for(sd.forced.wait(), 5)
    finally:
        sd.uninstall()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


async def test_wait_or_force_lets_work_finish() -> None:
    forced = asyncio.Event()
    gate = asyncio.Event()

    async def work() -> object:
        await gate.wait()
        return "done"

    task = asyncio.ensure_future(work())
    asyncio.get_running_loop().call_later(0.01, gate.set)
    called: list[bool] = []
    await wait_or_force(task, forced=forced, grace=5, on_force=lambda: called.append(True))
    assert task.result() == "done"
    assert called == []


async def test_wait_or_force_cancels_on_force() -> None:
    forced = asyncio.Event()
    task = asyncio.ensure_future(asyncio.Event().wait())
    asyncio.get_running_loop().call_later(0.01, forced.set)

    def cancel() -> None:
        task.cancel()

    await wait_or_force(task, forced=forced, grace=5, on_force=cancel)
    assert task.cancelled()
