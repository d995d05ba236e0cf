"""Graceful stop on SIGTERM and SIGINT: the sync under way finishes, then the agent exits.

The first signal asks for a stop: no new sync starts, the running one completes (its
writes are whole transactions, and the inventory is written as the union of old and new
before objects are touched, so even a cut-short sync converges on the next start). A second
signal, or the grace period running out, cancels what is left at the next await, which
is always between two store writes, never inside one.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from typing import Any

log = logging.getLogger("gitkrm.shutdown")

SIGNALS = (signal.SIGTERM, signal.SIGINT)
DEFAULT_GRACE = 60.0


class Shutdown:
    """Turns the stop signals into an event; `on_force` runs on the second signal."""

    def __init__(self) -> None:
        self.requested = asyncio.Event()
        self.forced = asyncio.Event()
        self.signal_name: str | None = None
        self._installed: list[signal.Signals] = []

    def install(self) -> None:
        """Handle the signals (again, when something else took them meanwhile)."""
        loop = asyncio.get_running_loop()
        for sig in SIGNALS:
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
            except (NotImplementedError, RuntimeError):  # not the main thread
                continue
            if sig not in self._installed:
                self._installed.append(sig)

    def uninstall(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in self._installed:
            loop.remove_signal_handler(sig)
        self._installed.clear()

    def _on_signal(self, sig: signal.Signals) -> None:
        if self.requested.is_set():
            log.warning("second %s: stopping now", sig.name)
            self.forced.set()
            return
        self.signal_name = sig.name
        log.info("%s received: finishing the sync under way, then stopping", sig.name)
        self.requested.set()

    def request(self) -> None:
        """Ask for a stop from code (tests, an embedding program)."""
        self.requested.set()


async def wait_or_force(
    aw: asyncio.Future[Any],
    *,
    forced: asyncio.Event,
    grace: float,
    on_force: Callable[[], None],
) -> None:
    """Wait for `aw`; on `forced` or after `grace` seconds call `on_force` and wait again."""
    force_wait: asyncio.Future[Any] = asyncio.ensure_future(forced.wait())
    try:
        done, _ = await asyncio.wait({aw, force_wait}, timeout=grace, return_when="FIRST_COMPLETED")
        if aw not in done:
            on_force()
            await asyncio.gather(aw, return_exceptions=True)
    finally:
        force_wait.cancel()
