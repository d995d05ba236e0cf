"""Waiting on a condition with a deadline (no sleeping and hoping)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tests.support.wait import eventually_async


async def wait_until(
    cond: Callable[[], bool | Awaitable[bool]], *, within: float = 10.0, what: str = "condition"
) -> None:
    """tests.support.wait.eventually_async, polling every 20 ms."""
    await eventually_async(cond, timeout=within, interval=0.02, message=what)
