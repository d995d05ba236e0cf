"""Watch streams from a cluster that survive dropped connections.

A watch without a resourceVersion is a list (page by page) delivered as ADDED events, then a
watch from the list's revision, as an informer does: that makes every later resume exact.
The stream is read as JSON lines; the last revision seen (of an event or a BOOKMARK) is
kept, and when the connection drops, or the server ends the stream (its timeoutSeconds),
the watch opens again from there. A 410 (the revision was compacted) is `Expired` to the
caller, who lists again; an ERROR event is raised as its Status.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import aiohttp
import orjson

from gitkrm.errors import GitkrmError, ServiceUnavailable, from_status
from gitkrm.krm import Obj
from gitkrm.store.kube.client import KubeClient, encode_params
from gitkrm.store.protocol import EventType, WatchEvent

log = logging.getLogger(__name__)

WATCH_SECONDS: Final = (300, 600)  # the server ends a watch after this long (client-go's)
READ_SLACK: Final = 30.0  # a stream silent this much longer than that is dead
_TYPES: Final = {t.value: t for t in EventType}
ListPage = Callable[[str | None], Awaitable[Obj]]


@dataclass(frozen=True, slots=True)
class WatchRequest:
    path: str
    api_version: str
    kind: str
    label_selector: str | None = None
    field_selector: str | None = None
    allow_bookmarks: bool = False


def _rv(obj: Any) -> str | None:
    md = obj.get("metadata") if isinstance(obj, dict) else None
    rv = md.get("resourceVersion") if isinstance(md, dict) else None
    return rv if isinstance(rv, str) and rv else None


async def initial_events(req: WatchRequest, list_page: ListPage) -> tuple[list[WatchEvent], str]:
    """The current objects as ADDED events, and the revision to watch from."""
    events: list[WatchEvent] = []
    token: str | None = None
    rv = ""
    while True:
        page = await list_page(token)
        md = page.get("metadata") or {}
        rv = rv or str(md.get("resourceVersion") or "")
        for obj in page.get("items") or ():
            raw = orjson.dumps({"type": "ADDED", "object": obj}) + b"\n"
            events.append(WatchEvent(type=EventType.ADDED, obj=obj, raw=raw))
        token = md.get("continue") or None
        if not token:
            return events, rv


async def stream_events(
    client: KubeClient, req: WatchRequest, resource_version: str
) -> AsyncIterator[WatchEvent]:
    """Events after `resource_version`, resumed across dropped connections."""
    rv = resource_version
    failures = 0
    opts = client.options
    while True:
        seconds = random.randint(*WATCH_SECONDS)  # spread, not crypto
        params = encode_params(
            {
                "watch": True,
                "resourceVersion": rv,
                "labelSelector": req.label_selector,
                "fieldSelector": req.field_selector,
                "allowWatchBookmarks": req.allow_bookmarks,
                "timeoutSeconds": seconds,
            }
        )
        opened = time.monotonic()
        delivered = 0
        try:
            async with client.stream(
                req.path, params=params, read_timeout=seconds + READ_SLACK
            ) as body:
                pending = b""
                async for chunk in body.iter_any():
                    lines = (pending + chunk).split(b"\n")
                    pending = lines.pop()
                    for line in lines:
                        if not line.strip():
                            continue
                        ev = orjson.loads(line)
                        etype = _TYPES.get(ev.get("type"))
                        obj = ev.get("object")
                        if etype is EventType.ERROR or etype is None or not isinstance(obj, dict):
                            raise from_status(obj if isinstance(obj, dict) else {})
                        new_rv = _rv(obj)
                        if new_rv is not None:
                            rv = new_rv
                        failures = 0
                        delivered += 1
                        if etype is EventType.BOOKMARK and not req.allow_bookmarks:
                            continue
                        if "kind" not in obj:  # a server that leaves them out
                            obj["apiVersion"], obj["kind"] = req.api_version, req.kind
                        yield WatchEvent(type=etype, obj=obj, raw=line + b"\n")
        except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError) as e:
            why = f"{e!r}"
        except GitkrmError as e:
            if e.code != 429 and e.code < 500:
                raise  # Expired (410), Forbidden, NotFound: the caller decides
            why = e.message
        else:
            if delivered or time.monotonic() - opened > 1.0:
                continue  # the server ended the stream: open it again at once
            why = "the stream ended at once"
        failures += 1
        if failures > opts.max_retries:
            raise ServiceUnavailable(f"watch {req.path}: gave up after {failures} tries: {why}")
        delay = min(opts.max_backoff, opts.backoff * float(2 ** (failures - 1)))
        log.debug("watch %s from %s: reopening in %.2fs: %s", req.path, rv, delay, why)
        await asyncio.sleep(delay)
