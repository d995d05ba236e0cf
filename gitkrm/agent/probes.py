"""What the agent serves on `--listen` on the cluster target (`ProbeService`): the cluster is
the API; the agent serves only `/healthz` (the process answers), `/readyz` (see
`ClusterTarget.readiness`) and `/metrics`, over plain HTTP and without a token (nothing there
reads or writes objects), as kubelet probes and Prometheus expect. It loads no API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from gitkrm.server.listen import bind
from gitkrm.server.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from gitkrm.server.metrics import Metrics

log = logging.getLogger("gitkrm.agent")

Readiness = Callable[[], tuple[bool, str]]
"""(ready, why): the `/readyz` answer."""


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: the agent owns SIGTERM and SIGINT."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class ProbeService:
    """`/healthz`, `/readyz` and `/metrics` of the agent on the cluster target."""

    def __init__(self, *, host: str, port: int, readiness: Readiness) -> None:
        self.metrics = Metrics()
        self._readiness = readiness
        self._sock = bind(host, port, backlog=128)
        bound_port = int(self._sock.getsockname()[1])
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{bound_port}"
        self.port = bound_port
        app = Starlette(
            routes=[
                Route("/healthz", self._healthz),
                Route("/livez", self._healthz),
                Route("/readyz", self._readyz),
                Route("/metrics", self._metrics),
            ]
        )
        config = uvicorn.Config(
            app,
            log_level="warning",
            log_config=None,
            access_log=False,
            lifespan="off",
            loop="none",
            timeout_graceful_shutdown=2,
            server_header=False,
        )
        self._server = _Server(config)
        self._task: asyncio.Task[None] | None = None

    async def _healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def _readyz(self, request: Request) -> Response:
        ready, why = self._readiness()
        return PlainTextResponse(why, status_code=200 if ready else 503)

    async def _metrics(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=METRICS_CONTENT_TYPE)

    async def start(self) -> None:
        self._task = asyncio.create_task(
            self._server.serve(sockets=[self._sock]), name="gitkrm-probes"
        )
        log.info("serving /healthz, /readyz and /metrics", extra={"fields": {"url": self.url}})

    async def stop(self) -> None:
        self._server.should_exit = True
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._sock.close()

    def observe_sync(self, source: str, result: str, seconds: float) -> None:
        self.metrics.sync_duration.labels(source=source, result=result).observe(seconds)
