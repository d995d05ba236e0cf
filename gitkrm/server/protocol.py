"""uvicorn's httptools protocol, writing each whole response in one piece.

uvicorn writes a response's head when the app sends `http.response.start` and its body at
`http.response.body`: two transport writes, so two TLS records and two send syscalls per
response (a fifth of the server's CPU on a create). When the head declares a
Content-Length the body follows at once, so the head is held back and written with the
body's first bytes. Streams (watches: no Content-Length) get their head at once, as clients
wait for it before the first event.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle


class _HeadHolder:
    """Stands in for the transport while uvicorn writes the head: keeps the bytes."""

    __slots__ = ("head",)

    def __init__(self) -> None:
        self.head = b""

    def write(self, data: bytes) -> None:
        self.head += data


class _Prepending:
    """Stands in for the transport while uvicorn writes the body: its first write carries
    the held head; everything else goes to the transport."""

    __slots__ = ("head", "transport")

    def __init__(self, transport: asyncio.Transport, head: bytes) -> None:
        self.transport = transport
        self.head = head

    def write(self, data: bytes) -> None:
        if self.head:
            data = self.head + data
            self.head = b""
        self.transport.write(data)

    def close(self) -> None:
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()


def _declares_length(message: Any) -> bool:
    return any(name.lower() == b"content-length" for name, _ in message.get("headers", ()))


class OneWriteCycle(RequestResponseCycle):
    """A request cycle whose fixed-length responses go out in one transport write."""

    _held: bytes = b""

    async def send(self, message: Any) -> None:
        real = self.transport
        if (
            message["type"] == "http.response.start"
            and not self.response_started
            and self.scope["method"] != "HEAD"  # no body write would carry the head
            and _declares_length(message)
        ):
            holder = _HeadHolder()
            self.transport = holder  # type: ignore[assignment]
            try:
                await super().send(message)
            finally:
                self.transport = real
            self._held = holder.head
            return
        head = self._held
        if head and message["type"] == "http.response.body":
            self._held = b""
            prepending = _Prepending(real, head)
            self.transport = prepending  # type: ignore[assignment]
            try:
                await super().send(message)
            finally:
                self.transport = real
            return
        await super().send(message)


class OneWriteProtocol(HttpToolsProtocol):
    """HttpToolsProtocol whose request cycles are OneWriteCycles (uvicorn's `http=`)."""

    def on_headers_complete(self) -> None:
        before = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        # The cycle's ASGI task is created but has not run yet: its send is still to come.
        if cycle is not None and cycle is not before and type(cycle) is RequestResponseCycle:
            cycle.__class__ = OneWriteCycle
