"""An in-process HTTP client for the fuzz targets: calls an ASGI app with the scope uvicorn
would build (any raw path and query bytes, the path percent-decoded as uvicorn does), and
cuts streaming answers (watches) off after a moment, as a client that hangs up.

httpx.ASGITransport would do for plain requests, but it normalizes the URL it is given
and waits for the whole body, which a watch never ends."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote

from starlette.types import ASGIApp, Message

ANSWER_WITHIN: Final = 20.0  # seconds for the first byte of an answer: longer is a hang
STREAM_FOR: Final = 0.02  # seconds a streaming answer is read before the client hangs up


@dataclass
class Answer:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    complete: bool = False  # the app ended the body (a cut-off watch did not)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


async def call(
    app: ASGIApp,
    method: str,
    raw_path: bytes,
    query: bytes = b"",
    headers: list[tuple[bytes, bytes]] | None = None,
    body: bytes = b"",
) -> Answer:
    """One request; AssertionError when the app gives no answer within ANSWER_WITHIN."""
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8080),
        "client": ("127.0.0.1", 40000),
        "scheme": "http",
        "method": method,
        "root_path": "",
        "path": unquote(raw_path.decode("ascii")),
        "raw_path": raw_path,
        "query_string": query,
        "headers": list(headers or []),
        "state": {},
    }
    answer = Answer()
    started = asyncio.Event()
    finished = asyncio.Event()
    hung_up = asyncio.Event()
    sent_body = False

    async def receive() -> Message:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await hung_up.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            assert not started.is_set(), "http.response.start sent twice"
            answer.status = int(message["status"])
            answer.headers = {
                k.decode("latin-1").lower(): v.decode("latin-1")
                for k, v in message.get("headers", [])
            }
            started.set()
        elif message["type"] == "http.response.body":
            assert started.is_set(), "a body before http.response.start"
            answer.body += message.get("body", b"")
            if not message.get("more_body", False):
                answer.complete = True
                finished.set()

    task = asyncio.ensure_future(app(scope, receive, send))
    waiter = asyncio.ensure_future(started.wait())
    try:
        done, _ = await asyncio.wait(
            [task, waiter],
            timeout=ANSWER_WITHIN,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if task in done:
            task.result()  # the app's own exception, if any
        assert started.is_set(), f"no answer within {ANSWER_WITHIN}s"
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(finished.wait(), STREAM_FOR)
        hung_up.set()
        await asyncio.wait_for(task, ANSWER_WITHIN)  # the app must notice the hang-up
    finally:
        hung_up.set()
        waiter.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return answer
