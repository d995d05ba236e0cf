"""OneWriteCycle: a fixed-length response leaves in one transport write; streams (no
Content-Length) get their head at once; HEAD responses still get theirs."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

from uvicorn.protocols.http.flow_control import FlowControl

from gitkrm.server import ServerThread
from gitkrm.server.protocol import OneWriteCycle


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def _cycle(method: str = "GET") -> tuple[OneWriteCycle, _Transport]:
    transport = _Transport()
    scope: Any = {"type": "http", "method": method, "path": "/", "headers": []}
    cycle = OneWriteCycle(
        scope=scope,
        transport=transport,  # type: ignore[arg-type]
        flow=FlowControl(transport),  # type: ignore[arg-type]
        logger=logging.getLogger("test"),
        access_logger=logging.getLogger("test.access"),
        access_log=False,
        default_headers=[],
        message_event=asyncio.Event(),
        expect_100_continue=False,
        keep_alive=True,
        on_response=lambda: None,
    )
    return cycle, transport


def _start(*headers: tuple[bytes, bytes]) -> dict[str, Any]:
    return {"type": "http.response.start", "status": 200, "headers": list(headers)}


async def test_a_fixed_length_response_is_one_write() -> None:
    cycle, transport = _cycle()
    await cycle.send(_start((b"content-length", b"2"), (b"content-type", b"application/json")))
    assert transport.writes == []
    await cycle.send({"type": "http.response.body", "body": b"{}"})
    assert len(transport.writes) == 1
    head, _, body = transport.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"content-length: 2" in head
    assert body == b"{}"
    assert cycle.response_complete
    assert cycle.transport is transport  # type: ignore[comparison-overlap]


async def test_a_body_in_parts_writes_the_head_with_the_first() -> None:
    cycle, transport = _cycle()
    await cycle.send(_start((b"content-length", b"4")))
    await cycle.send({"type": "http.response.body", "body": b"ab", "more_body": True})
    await cycle.send({"type": "http.response.body", "body": b"cd"})
    assert len(transport.writes) == 2
    assert transport.writes[0].endswith(b"\r\n\r\nab")
    assert transport.writes[1] == b"cd"


async def test_a_stream_gets_its_head_at_once() -> None:
    cycle, transport = _cycle()
    await cycle.send(_start((b"content-type", b"application/json")))
    assert len(transport.writes) == 1
    assert transport.writes[0].endswith(b"transfer-encoding: chunked\r\n\r\n")
    await cycle.send({"type": "http.response.body", "body": b"x", "more_body": True})
    assert transport.writes[1] == b"1\r\nx\r\n"


async def test_a_head_response_writes_its_head() -> None:
    cycle, transport = _cycle("HEAD")
    await cycle.send(_start((b"content-length", b"2")))
    await cycle.send({"type": "http.response.body", "body": b"{}"})
    assert len(transport.writes) == 1
    assert transport.writes[0].endswith(b"\r\n\r\n")


def _exchange(port: int, request: bytes) -> bytes:
    """Send raw bytes, read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_the_server_answers_pipelined_requests_whole_and_in_order() -> None:
    with ServerThread() as api:
        first = b"GET /version HTTP/1.1\r\nhost: x\r\n\r\n"
        last = b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
        out = _exchange(api.port, first + last)
    head, _, rest = out.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    length = int(next(h for h in head.split(b"\r\n") if h.startswith(b"content-length:"))[15:])
    assert b'"gitVersion"' in rest[:length]
    head2, _, body2 = rest[length:].partition(b"\r\n\r\n")
    assert head2.startswith(b"HTTP/1.1 200 OK")
    assert body2 == b"ok"


def test_the_server_uses_the_one_write_protocol() -> None:
    from gitkrm.server.protocol import OneWriteProtocol
    from gitkrm.server.serve import _http_protocol

    assert _http_protocol() is OneWriteProtocol
