"""The state every handler shares: the store, its registry, cached documents, metrics."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Final

from starlette.requests import Request

from gitkrm.errors import BadRequest
from gitkrm.server.discovery import Discovery
from gitkrm.server.metrics import Metrics
from gitkrm.server.openapi import OpenAPIv3
from gitkrm.server.openapi_v2 import OpenAPIv2
from gitkrm.server.tables import Tables
from gitkrm.store.sqlite import SqliteStore

_INCLUDE: Final = ("", "Metadata", "Object", "None")


@dataclass(frozen=True, slots=True)
class Limits:
    body_bytes: int = 3 * 1024 * 1024
    body_timeout: float = 60.0
    stuck_watch_timeout: float = 60.0
    """A watch whose client accepts no data for this long is closed."""


class ServerContext:
    def __init__(self, store: SqliteStore, *, metrics: Metrics, limits: Limits) -> None:
        self.store = store
        self.registry = store.registry
        self.discovery = Discovery(self.registry)
        self.openapi = OpenAPIv3(self.registry)
        self.openapi_v2 = OpenAPIv2(self.registry)
        self.tables = Tables(store)
        self.metrics = metrics
        self.limits = limits
        self._closing: asyncio.Event | None = None

    @property
    def closing(self) -> asyncio.Event:
        """Set when the server shuts down: watch streams end."""
        if self._closing is None:
            self._closing = asyncio.Event()
        return self._closing


def include_object(request: Request) -> str:
    v = request.query_params.get("includeObject") or ""
    if v not in _INCLUDE:
        raise BadRequest(f'unrecognized includeObject value: "{v}"')
    return v or "Metadata"
