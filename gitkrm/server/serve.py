"""Running the API server: `serve()` in a running event loop (the CLI, the agent), and
`ServerThread`, which runs one in a thread of its own (tests, benchmarks, embedding).

Security: on loopback the server needs nothing; bound anywhere else it requires a bearer
token and TLS (a given pair, or a self-signed one generated into the state dir), and
refuses to start otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import uvicorn

from gitkrm.controllers import ControllerManager, ControllerOptions
from gitkrm.errors import BadRequest
from gitkrm.server.app import ApiServer
from gitkrm.server.context import Limits
from gitkrm.server.kubeconfig import write_kubeconfig
from gitkrm.server.listen import bind
from gitkrm.server.metrics import Metrics
from gitkrm.server.tls import TLSFiles, default_hosts, ensure_self_signed
from gitkrm.store.sqlite import SqliteStore

log = logging.getLogger(__name__)

T = TypeVar("T")

KUBECONFIG: Final = "kubeconfig"
DEFAULT_LISTEN: Final = "127.0.0.1:6443"


class _StuckWatchFilter(logging.Filter):
    """Drops uvicorn's error for a response left incomplete: the one response gitkrm
    leaves so is the watch of a client that stopped reading (logged by the watch)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing response."


_UVICORN_ERRORS = logging.getLogger("uvicorn.error")
if not any(isinstance(f, _StuckWatchFilter) for f in _UVICORN_ERRORS.filters):
    _UVICORN_ERRORS.addFilter(_StuckWatchFilter())


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 6443
    token: str | None = None
    tls: TLSFiles | None = None
    state_dir: Path | None = None
    """Where the kubeconfig (and a generated TLS pair) is written."""
    limits: Limits = field(default_factory=Limits)
    log_level: str = "warning"

    def secured(self) -> ServeOptions:
        """These options with TLS filled in, or BadRequest when they are not safe to use."""
        if is_loopback(self.host):
            if self.tls is not None:
                self.tls.check()
            return self
        if not self.token:
            raise BadRequest(
                f"refusing to listen on {self.host}: a non-loopback address needs a bearer "
                "token (--token-file) and TLS (--tls-cert/--tls-key, or a self-signed pair "
                "generated into the state dir)"
            )
        if self.tls is not None:
            self.tls.check()
            return self
        if self.state_dir is None:
            raise BadRequest(
                f"refusing to listen on {self.host} without TLS: give --tls-cert and "
                "--tls-key, or a state dir to generate a self-signed pair into"
            )
        tls = ensure_self_signed(self.state_dir, default_hosts(self.host))
        return ServeOptions(
            host=self.host,
            port=self.port,
            token=self.token,
            tls=tls,
            state_dir=self.state_dir,
            limits=self.limits,
            log_level=self.log_level,
        )


@dataclass(frozen=True, slots=True)
class Bound:
    """Where a started server listens."""

    url: str
    port: int
    kubeconfig: Path | None


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handling: the program running `serve()` owns
    the signals (the CLI turns SIGINT/SIGTERM into `stop`)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.listening.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _url(host: str, port: int, tls: bool) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("::1" if host == "::" else host)
    if ":" in shown:
        shown = f"[{shown}]"
    return f"{'https' if tls else 'http'}://{shown}:{port}"


async def serve(
    store: SqliteStore,
    options: ServeOptions,
    *,
    started: Callable[[Bound], None] | None = None,
    stop: asyncio.Event | None = None,
    metrics: Metrics | None = None,
) -> None:
    """Serve `store` until `stop` is set (signals are the caller's to handle).

    `metrics`: the registry `/metrics` shows (the agent passes its own to record sync
    durations in it); a new one by default.
    """
    opts = options.secured()
    sock = bind(opts.host, opts.port)
    port = int(sock.getsockname()[1])
    app = ApiServer(store, token=opts.token, limits=opts.limits, metrics=metrics)
    config = uvicorn.Config(
        app,
        log_level=opts.log_level,
        log_config=None,  # the program running serve() owns logging (text or JSON)
        access_log=False,
        lifespan="on",
        loop="none",
        http=_http_protocol(),
        proxy_headers=False,  # no proxy in front: skip X-Forwarded-* handling per request
        ssl_certfile=str(opts.tls.cert) if opts.tls else None,
        ssl_keyfile=str(opts.tls.key) if opts.tls else None,
        timeout_keep_alive=30,
        timeout_graceful_shutdown=5,
        server_header=False,
    )
    server = _Server(config)
    url = _url(opts.host, port, opts.tls is not None)
    kubeconfig = None
    if opts.state_dir is not None:
        kubeconfig = write_kubeconfig(
            opts.state_dir / KUBECONFIG,
            server=url,
            token=opts.token,
            ca_pem=opts.tls.ca_pem() if opts.tls else None,
        )

    async def stopper() -> None:
        if stop is None:
            return
        await stop.wait()
        app.begin_shutdown()
        server.should_exit = True

    stop_task = asyncio.ensure_future(stopper())
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        listening = asyncio.ensure_future(server.listening.wait())
        await asyncio.wait({listening, serving}, return_when=asyncio.FIRST_COMPLETED)
        listening.cancel()
        if server.started and started is not None:
            started(Bound(url=url, port=port, kubeconfig=kubeconfig))
        await serving
    finally:
        stop_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stop_task
        if not serving.done():
            server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await serving
        sock.close()


def _http_protocol() -> type[asyncio.Protocol] | str:
    """httptools (each response in one write) when installed, else h11."""
    try:
        from gitkrm.server.protocol import OneWriteProtocol
    except ImportError:
        return "h11"
    return OneWriteProtocol


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when installed (twice the request rate), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


class ServerThread:
    """A server with its own store and event loop in a background thread.

    `store_path` is a SQLite file or ":memory:". Use as a context manager, or call
    `start()` and `stop()`; `run(coro_fn)` runs a coroutine on the server's loop (to
    reach the store directly).
    """

    def __init__(
        self,
        *,
        store_path: str = ":memory:",
        options: ServeOptions | None = None,
        store_options: dict[str, Any] | None = None,
        controllers: ControllerOptions | None = None,
    ) -> None:
        self._controllers = controllers
        self._store_path = store_path
        self._options = options or ServeOptions(port=0)
        self._store_options = store_options or {}
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.bound: Bound | None = None
        self.store: SqliteStore | None = None

    @property
    def url(self) -> str:
        assert self.bound is not None, "server not started"
        return self.bound.url

    @property
    def port(self) -> int:
        assert self.bound is not None, "server not started"
        return self.bound.port

    def start(self, timeout: float = 30.0) -> ServerThread:
        self._thread = threading.Thread(target=self._main, name="gitkrm-api", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the API server did not start within {timeout}s")
        if self._error is not None:
            raise self._error
        return self

    def _main(self) -> None:
        loop = new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as e:
            if not self._ready.is_set():
                self._error = e
            else:
                log.exception("API server thread failed")
        finally:
            self._ready.set()
            loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        store = SqliteStore.open(self._store_path, **self._store_options)
        self.store = store

        def started(b: Bound) -> None:
            self.bound = b
            self._ready.set()

        manager = None
        if self._controllers is not None:  # as `gitkrm serve`: the bundled controllers too
            manager = ControllerManager(store=store, options=self._controllers)
            await manager.start()
        try:
            await serve(store, self._options, started=started, stop=self._stop)
        finally:
            if manager is not None:
                await manager.stop()
            await store.close()

    def run(self, fn: Callable[[SqliteStore], Coroutine[Any, Any, T]], timeout: float = 30) -> T:
        """Run `fn(store)` on the server's loop and return its result."""
        assert self._loop is not None
        store = self.store
        assert store is not None
        fut = asyncio.run_coroutine_threadsafe(fn(store), self._loop)
        return fut.result(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        if self._thread is None:
            return
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"the API server did not stop within {timeout}s")
        self._thread = None

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
