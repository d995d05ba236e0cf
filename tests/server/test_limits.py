"""read_body: whole bodies, the size limit, slow clients cut off, cancellation kept."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from starlette.requests import Request

from gitkrm.errors import BadRequest, RequestEntityTooLarge, Timeout
from gitkrm.server.limits import read_body

Receive = Callable[[], Awaitable[dict[str, Any]]]


def _request(receive: Receive, headers: list[tuple[bytes, bytes]] | None = None) -> Request:
    return Request({"type": "http", "method": "POST", "headers": headers or []}, receive)


def _messages(*parts: bytes) -> Receive:
    queue = [
        {"type": "http.request", "body": p, "more_body": i < len(parts) - 1}
        for i, p in enumerate(parts)
    ]

    async def receive() -> dict[str, Any]:
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    return receive


async def _never() -> dict[str, Any]:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def test_parts_are_joined() -> None:
    assert await read_body(_request(_messages(b"ab", b"", b"cd"))) == b"abcd"
    assert await read_body(_request(_messages(b"whole"))) == b"whole"
    assert await read_body(_request(_messages(b""))) == b""


async def test_too_large() -> None:
    with pytest.raises(RequestEntityTooLarge):
        await read_body(_request(_messages(b"abc", b"def")), limit=5)
    with pytest.raises(RequestEntityTooLarge):  # declared: refused before reading
        await read_body(_request(_never, [(b"content-length", b"6")]), limit=5)


async def test_a_client_that_leaves_is_a_bad_request() -> None:
    async def gone() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    with pytest.raises(BadRequest, match="closed the connection"):
        await read_body(_request(gone))


async def test_a_slow_client_times_out() -> None:
    with pytest.raises(Timeout, match=r"within 0\.05s"):
        await read_body(_request(_never), within=0.05)
    # The task is usable afterwards: the deadline's cancellation was taken back.
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0
    await asyncio.sleep(0)


async def test_a_cancellation_from_elsewhere_stays_one() -> None:
    task = asyncio.ensure_future(read_body(_request(_never), within=30))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
