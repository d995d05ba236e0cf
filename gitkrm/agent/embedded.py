"""The embedded target: the SQLite store of the state directory, as its one writer.

It owns the store, its watch cache, the Kubernetes API served on `--listen` (`ApiService`)
and the bundled controllers (`ControllerManager`, when the options ask for them). At open it
installs the GitSource CRD and begins the agent's one term, which lasts until `close`. The
API server and the controllers are imported where started: `run --once` with nothing to do
loads neither (tests/cli/test_imports.py), and no leader election ever.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from . import crd
from .shutdown import Shutdown
from .state import store_url
from .status import Outcome
from .storeowner import StoreOwner
from .targets import Terms

if TYPE_CHECKING:
    from gitkrm.controllers import ControllerManager

    from .agent import AgentOptions
    from .api import ApiService
    from .term import Term


class EmbeddedTarget(StoreOwner):
    """A `Target` (see `gitkrm.agent.targets`)."""

    def __init__(self, options: AgentOptions, terms: Terms) -> None:
        super().__init__()
        self._options = options
        self._terms = terms
        self._api: ApiService | None = None
        self._controllers: ControllerManager | None = None

    @property
    def controllers(self) -> ControllerManager | None:
        """The bundled controllers while they run."""
        return self._controllers

    def _term(self) -> Term:
        term = self._terms.term
        if term is None:
            raise RuntimeError("the agent is not open")
        return term

    async def open(self) -> None:
        await crd.install(await self._open_store(store_url(self._options.state_dir)))
        await self._terms.begin()

    async def serves_gitsources(self) -> bool:
        return True  # installed at open

    def observe_sync(self, source: str, result: str, seconds: float) -> None:
        if self._api is not None:
            self._api.observe_sync(source, result, seconds)

    def readiness(self) -> tuple[bool, str]:
        if not self.is_open:
            return False, "the agent is not open"
        return True, "the embedded store is open"

    async def sync_once(self, shutdown: Shutdown | None) -> list[Outcome]:
        return await self._term().sync_all(shutdown, [])

    async def run(self, shutdown: Shutdown) -> None:
        """Serve the API, start the controllers and the workers; stop gracefully."""
        term = self._term()
        if self._options.listen is not None:
            from .api import ApiService

            host, port = self._options.listen
            self._api = ApiService(
                self.store,
                host=host,
                port=port,
                state_dir=self._options.state_dir,
                token=self._options.api_token,
                tls=self._options.api_tls,
            )
            await self._api.start()
            shutdown.install()  # again: uvicorn took the signals when it started
        try:
            await self.start_controllers()
            await term.start_workers()
            await shutdown.requested.wait()
            await term.stop_workers(forced=shutdown.forced)
        finally:
            await self.stop_controllers()
            api, self._api = self._api, None
            if api is not None:
                await api.stop()

    async def start_controllers(self) -> None:
        if self._options.controllers is None or self._controllers is not None:
            return
        from gitkrm.controllers import ControllerManager

        options = self._options.controllers
        ca = self._api.ca_pem() if self._api is not None else None
        if ca is not None:
            options = dataclasses.replace(options, root_ca_pem=ca)
        self._controllers = ControllerManager(store=self.store, options=options, cache=self.cache)
        await self._controllers.start()

    async def stop_controllers(self) -> None:
        manager, self._controllers = self._controllers, None
        if manager is not None:
            await manager.stop()

    async def close(self) -> None:
        await self.stop_controllers()
        await self._terms.end(flush=True)
        await self._close_store()
