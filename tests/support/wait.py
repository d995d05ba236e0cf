"""Waiting on a condition with a deadline: the one way tests wait, never sleep-and-hope.

`eventually` polls a predicate from synchronous code, `eventually_async` from a coroutine
(its predicate may be a plain function or return an awaitable). Both return the first truthy
value the predicate gave; on timeout they raise AssertionError with `message` and the last
value observed, so a failure says what was being waited for and what was seen instead.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")

DEFAULT_TIMEOUT = 10.0
DEFAULT_INTERVAL = 0.02

_NOTHING_YET: Any = object()


def _failure(
    message: str, timeout: float, last: Any, error: BaseException | None
) -> AssertionError:
    seen = "the predicate never returned" if last is _NOTHING_YET else f"last value: {last!r}"
    if error is not None:
        seen += f" (last call raised {type(error).__name__}: {error})"
    return AssertionError(f"timed out after {timeout}s waiting for {message}; {seen}")


def eventually(
    predicate: Callable[[], T],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = DEFAULT_INTERVAL,
    message: str = "the condition",
) -> T:
    """Call `predicate` every `interval` seconds until it returns something truthy.

    An AssertionError raised by the predicate counts as "not yet" (so a predicate may be
    written with asserts); any other exception propagates at once.
    """
    deadline = time.monotonic() + timeout
    last: Any = _NOTHING_YET
    error: AssertionError | None = None
    while True:
        try:
            value = predicate()
        except AssertionError as e:
            error = e
        else:
            if inspect.isawaitable(value):
                if inspect.iscoroutine(value):
                    value.close()  # never awaited: no warning about it
                raise TypeError("eventually() got an async predicate: use eventually_async()")
            if value:
                return value
            last, error = value, None
        if time.monotonic() >= deadline:
            raise _failure(message, timeout, last, error)
        time.sleep(interval)


@overload
async def eventually_async(
    predicate: Callable[[], Awaitable[T]],
    *,
    timeout: float = ...,  # noqa: ASYNC109
    interval: float = ...,
    message: str = ...,
) -> T: ...


@overload
async def eventually_async(
    predicate: Callable[[], T],
    *,
    timeout: float = ...,  # noqa: ASYNC109
    interval: float = ...,
    message: str = ...,
) -> T: ...


async def eventually_async(
    predicate: Callable[[], Any],
    *,
    timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
    interval: float = DEFAULT_INTERVAL,
    message: str = "the condition",
) -> Any:
    """`eventually` for coroutines: the predicate may return a value or an awaitable."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = _NOTHING_YET
    error: AssertionError | None = None
    while True:
        try:
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
        except AssertionError as e:
            error = e
        else:
            if value:
                return value
            last, error = value, None
        if loop.time() >= deadline:
            raise _failure(message, timeout, last, error)
        await asyncio.sleep(interval)
