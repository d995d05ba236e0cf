"""What the agent serves on `--listen`.

Embedded target (`ApiService`): the Kubernetes API of the store it writes (kubectl and
Python clients read and edit objects while it runs: a live edit is drift, an edited
GitSource steers its source), with `<state>/kubeconfig` pointing at it.

Cluster target (`ProbeService`): the cluster is the API; the agent serves only `/healthz`
(the process answers), `/readyz` (see `ClusterTarget.readiness`) and `/metrics`, over plain HTTP
and without a token (nothing there reads or writes objects), as kubelet probes and
Prometheus expect.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from gitkrm.errors import InternalError
from gitkrm.server.listen import bind
from gitkrm.server.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from gitkrm.server.metrics import Metrics
from gitkrm.server.serve import Bound, ServeOptions, serve
from gitkrm.server.tls import TLSFiles
from gitkrm.store import Store
from gitkrm.store.sqlite import SqliteStore
from gitkrm.store.sqlite.stats import object_counts

log = logging.getLogger("gitkrm.agent")

Readiness = Callable[[], tuple[bool, str]]
"""(ready, why): the `/readyz` answer."""


class ApiService:
    """`start` binds and serves (BadRequest when the address can't be used); `stop` ends it."""

    def __init__(
        self,
        store: Store,
        *,
        host: str,
        port: int,
        state_dir: Path,
        token: str | None = None,
        tls: TLSFiles | None = None,
    ) -> None:
        if not isinstance(store, SqliteStore):
            raise InternalError("the API server serves the embedded store only")
        self._store = store
        self._options = ServeOptions(
            host=host, port=port, state_dir=state_dir, token=token, tls=tls
        ).secured()
        # The agent's own registry, so `/metrics` shows its sync durations too.
        self.metrics = Metrics(lambda: object_counts(store))
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.bound: Bound | None = None

    async def start(self) -> Bound:
        started = asyncio.Event()

        def on_started(bound: Bound) -> None:
            self.bound = bound
            started.set()

        self._task = asyncio.create_task(
            serve(
                self._store,
                self._options,
                started=on_started,
                stop=self._stop,
                metrics=self.metrics,
            ),
            name="gitkrm-api",
        )
        waiting = asyncio.ensure_future(started.wait())
        await asyncio.wait({waiting, self._task}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self.bound is None:
            await self._task  # raises why it could not start
            raise InternalError("the API server stopped before it started")
        log.info(
            "serving the Kubernetes API",
            extra={"fields": {"url": self.bound.url, "kubeconfig": str(self.bound.kubeconfig)}},
        )
        return self.bound

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def observe_sync(self, source: str, result: str, seconds: float) -> None:
        self.metrics.sync_duration.labels(source=source, result=result).observe(seconds)


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
