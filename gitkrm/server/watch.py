"""`?watch=1`: a stream of JSON events, one per line, until the timeout, a disconnect, or
shutdown.

Events come from the store already serialized (`WatchEvent.raw`, shared by every watcher)
and are written as they are; only Table watches (kubectl get -w) build their own rows.
A listener task per stream notices a client that went away, the deadline, shutdown, or a
client that has accepted no data for `stuck_watch_timeout` (its stream is cut so it holds
no buffers); one slow client never delays another, because each stream only awaits its
own socket and the store drops a watcher that falls too far behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any, Final

import orjson
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from gitkrm.errors import Cause, Expired, GitkrmError, Invalid
from gitkrm.krm import GVK
from gitkrm.server.context import ServerContext
from gitkrm.server.negotiation import Negotiated, Output
from gitkrm.server.params import ListParams
from gitkrm.server.printing import Printer
from gitkrm.server.responses import error_response
from gitkrm.server.tables import table
from gitkrm.store import EventType, WatchEvent

log = logging.getLogger(__name__)

_HEADERS: Final = [(b"content-type", b"application/json"), (b"cache-control", b"no-cache")]


def error_event(err: GitkrmError) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": err.to_status()}) + b"\n"


def check_params(lp: ListParams) -> None:
    if lp.send_initial_events:
        raise Invalid.for_object(
            kind="ListOptions",
            group="meta.k8s.io",
            name="",
            causes=[
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: sendInitialEvents is not supported by this server",
                    "sendInitialEvents",
                )
            ],
        )


class WatchResponse(Response):
    """Streams a watch; errors before the first byte are ordinary Status responses."""

    def __init__(
        self,
        ctx: ServerContext,
        *,
        gvk: GVK,
        namespace: str | None,
        params: ListParams,
        negotiated: Negotiated,
        printer: Printer | None,
        include_object: str,
    ) -> None:
        super().__init__(b"", status_code=200, media_type="application/json")
        self.ctx = ctx
        self.gvk = gvk
        self.namespace = namespace
        self.params = params
        self.negotiated = negotiated
        self.printer = printer
        self.include_object = include_object
        self._sending_since: float | None = None
        self._stop: str | None = None
        self._columns_sent = False
        self._streaming = False

    def _table_line(self, ev: WatchEvent) -> bytes:
        if ev.type in (EventType.BOOKMARK, EventType.ERROR) or self.printer is None:
            return ev.raw
        t = table(
            self.printer,
            [ev.obj],
            list_metadata={"resourceVersion": ev.obj.get("metadata", {}).get("resourceVersion")},
            include_object=self.include_object,
            table_version=self.negotiated.table_version,
        )
        if self._columns_sent:
            t["columnDefinitions"] = []
        self._columns_sent = True
        return orjson.dumps({"type": ev.type.value, "object": t}) + b"\n"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        ctx, lp = self.ctx, self.params
        try:
            events = ctx.store.watch(
                self.gvk,
                namespace=self.namespace,
                resource_version=lp.resource_version,
                label_selector=lp.label_selector,
                field_selector=lp.field_selector,
                allow_bookmarks=lp.allow_bookmarks,
            )
        except Expired as e:
            await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
            await send({"type": "http.response.body", "body": error_event(e)})
            return
        except GitkrmError as e:
            await error_response(e)(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
        ctx.metrics.open_watches.inc()
        main = asyncio.current_task()
        assert main is not None
        listener = asyncio.ensure_future(self._listen(receive, main, lp.watch_timeout()))
        completed = False
        self._streaming = True
        try:
            await self._stream(events, send)
            completed = True
        except asyncio.CancelledError:
            if self._stop is None:
                raise
            main.uncancel()
            completed = self._stop != "stuck"
            if not completed:
                client = scope.get("client")
                log.warning(
                    "closed the watch of %s by %s: it accepted no data for %gs",
                    scope.get("path"),
                    f"{client[0]}:{client[1]}" if client else "a client",
                    ctx.limits.stuck_watch_timeout,
                )
        finally:
            self._streaming = False
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
            ctx.metrics.open_watches.dec()
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        if completed and self._stop != "disconnect":
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _stream(self, events: AsyncIterator[WatchEvent], send: Send) -> None:
        table_output = self.negotiated.output is Output.TABLE
        try:
            async for ev in events:
                line = self._table_line(ev) if table_output else ev.raw
                self._sending_since = time.monotonic()
                await send({"type": "http.response.body", "body": line, "more_body": True})
                self._sending_since = None
        except Expired as e:
            await send({"type": "http.response.body", "body": error_event(e), "more_body": True})

    async def _listen(self, receive: Receive, main: asyncio.Task[Any], lifetime: float) -> None:
        """Stop the stream (by cancelling it) on disconnect, deadline, shutdown or a stuck
        client."""
        deadline = time.monotonic() + lifetime
        stuck = self.ctx.limits.stuck_watch_timeout
        tick = max(0.05, min(5.0, stuck / 2))
        closing = asyncio.ensure_future(self.ctx.closing.wait())
        incoming: asyncio.Future[Any] = asyncio.ensure_future(receive())
        try:
            while True:
                now = time.monotonic()
                wait = max(0.0, min(deadline - now, tick))
                done, _ = await asyncio.wait(
                    {closing, incoming}, timeout=wait, return_when=asyncio.FIRST_COMPLETED
                )
                if incoming in done:
                    if incoming.result().get("type") == "http.disconnect":
                        self._stop = "disconnect"
                        break
                    incoming = asyncio.ensure_future(receive())
                if closing in done:
                    self._stop = "shutdown"
                    break
                now = time.monotonic()
                if now >= deadline:
                    self._stop = "timeout"
                    break
                since = self._sending_since
                if since is not None and now - since > stuck:
                    self._stop = "stuck"
                    break
        finally:
            closing.cancel()
            incoming.cancel()
        if self._streaming:  # the stream is suspended inside _stream: cancel it there
            main.cancel()
