"""Waiting on a condition with a deadline (no sleeping and hoping)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def wait_until(
    cond: Callable[[], bool | Awaitable[bool]], *, within: float = 10.0, what: str = "condition"
) -> None:
    deadline = time.monotonic() + within
    while True:
        got = cond()
        if not isinstance(got, bool):
            got = await got
        if got:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(0.02)
