"""What the agent serves on `--listen` on the embedded target (`ApiService`): the Kubernetes
API of the store it writes (kubectl and Python clients read and edit objects while it runs:
a live edit is drift, an edited GitSource steers its source), with `<state>/kubeconfig`
pointing at it. The cluster target serves probes instead (`gitkrm.agent.probes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from gitkrm.errors import InternalError
from gitkrm.server.metrics import Metrics
from gitkrm.server.serve import Bound, ServeOptions, serve
from gitkrm.server.tls import TLSFiles
from gitkrm.store import Store
from gitkrm.store.sqlite import SqliteStore
from gitkrm.store.sqlite.stats import object_counts

log = logging.getLogger("gitkrm.agent")


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

    def ca_pem(self) -> str | None:
        """The certificate clients verify the API with (None: served without TLS)."""
        tls = self._options.tls
        return tls.ca_pem().decode() if tls is not None else None

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
