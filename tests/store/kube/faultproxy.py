"""A small HTTP/1.1 proxy for fault tests: in front of a plain-HTTP API server, it answers
some requests itself (429 with Retry-After, 503) and cuts some responses short (a watch or
a list dropped mid-stream), and forwards everything else unchanged.

It understands just enough HTTP: requests with a Content-Length body, responses with a
Content-Length or a chunked body. Each client connection gets its own upstream one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Fault:
    """What to do to the next `count` requests that `match` (method, path)."""

    count: int
    status: int = 0  # answer this status instead of forwarding (0: forward)
    retry_after: str | None = None
    cut_after: int | None = None  # forward, but close after this many body bytes
    hang: bool = False  # read the request, never answer
    match: Callable[[str, str], bool] = lambda method, path: True


@dataclass
class Seen:
    method: str
    path: str
    answered: int  # status the client got (0: connection cut)


@dataclass
class FaultProxy:
    upstream_host: str
    upstream_port: int
    faults: list[Fault] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    heads: list[bytes] = field(default_factory=list)  # every request head, as it arrived
    inflight: int = 0
    max_inflight: int = 0
    port: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, fault: Fault) -> None:
        self.faults.append(fault)

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for t in list(self._tasks):
                t.cancel()
            for t in list(self._tasks):
                with contextlib.suppress(BaseException):
                    await t
            await self._server.wait_closed()

    def _take(self, method: str, path: str) -> Fault | None:
        for f in self.faults:
            if f.count > 0 and f.match(method, path):
                f.count -= 1
                return f
        return None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        up_r: asyncio.StreamReader | None = None
        up_w: asyncio.StreamWriter | None = None
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, path = head.split(b" ", 2)[:2]
                length = _content_length(head)
                body = await reader.readexactly(length) if length else b""
                m, p = method.decode(), path.decode()
                self.heads.append(head)
                fault = self._take(m, p)
                if fault is not None and fault.hang:
                    await reader.read()  # until the client gives up
                    return
                if fault is not None and fault.status:
                    writer.write(_status_response(fault.status, fault.retry_after))
                    await writer.drain()
                    self.seen.append(Seen(m, p, fault.status))
                    continue
                if up_w is None:
                    up_r, up_w = await asyncio.open_connection(
                        self.upstream_host, self.upstream_port
                    )
                assert up_r is not None
                up_w.write(head + body)
                await up_w.drain()
                cut = fault.cut_after if fault is not None else None
                self.inflight += 1
                self.max_inflight = max(self.max_inflight, self.inflight)
                try:
                    status = await _relay(up_r, writer, cut)
                finally:
                    self.inflight -= 1
                self.seen.append(Seen(m, p, status))
                if status == 0:
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            return
        finally:
            self._tasks.discard(task)
            for w in (writer, up_w):
                if w is not None:
                    w.close()


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


def _status_response(code: int, retry_after: str | None) -> bytes:
    reason = {429: "TooManyRequests", 503: "ServiceUnavailable", 500: "InternalError"}.get(
        code, "InternalError"
    )
    body = (
        f'{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure",'
        f'"message":"injected {code}","reason":"{reason}","code":{code}}}'
    ).encode()
    headers = [
        f"HTTP/1.1 {code} {reason}",
        "content-type: application/json",
        f"content-length: {len(body)}",
    ]
    if retry_after is not None:
        headers.append(f"retry-after: {retry_after}")
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + body


async def _relay(up: asyncio.StreamReader, writer: asyncio.StreamWriter, cut: int | None) -> int:
    """Copy one response; its status, or 0 when it was cut (connection to be closed)."""
    head = await up.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    writer.write(head)
    budget = cut if cut is not None else -1

    async def send(data: bytes) -> bool:
        nonlocal budget
        if budget >= 0 and len(data) >= budget:
            writer.write(data[:budget])
            await writer.drain()
            return False
        if budget >= 0:
            budget -= len(data)
        writer.write(data)
        await writer.drain()
        return True

    lower = head.lower()
    if b"transfer-encoding: chunked" in lower:
        while True:
            size_line = await up.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            data = await up.readexactly(size + 2)
            if not await send(size_line + data):
                return 0
            if size == 0:
                return status
    length = _content_length(head)
    if length and not await send(await up.readexactly(length)):
        return 0
    await writer.drain()
    return status
