"""A progress line on a terminal for syncs that take a while.

Drawn from a thread, because an apply is long stretches of synchronous store writes in
which the event loop does not turn: the line shows the phase (fetching, syncing) and the
time spent, with a bar when the phase knows its total. Nothing is drawn for quick syncs,
into files or pipes, or in JSON mode; the line is erased when the sync ends, before its
log line is written.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import TextIO

DELAY = 1.0
"""Seconds before the line appears: a quick sync never flickers."""
WIDTH = 30


def render(phase: str, elapsed: float, done: int | None = None, total: int | None = None) -> str:
    """`syncing   [##########....................] 1200/3600  4.2s` (no bar without a total)."""
    if total:
        filled = WIDTH * min(done or 0, total) // total
        bar = f" [{'#' * filled}{'.' * (WIDTH - filled)}] {done or 0}/{total}"
    else:
        bar = ""
    return f"{phase:<9}{bar}  {elapsed:.1f}s"


class Progress:
    """`with Progress(stream, label=...) as p: p.phase("syncing")`; stream None: no output."""

    def __init__(
        self, stream: TextIO | None, *, label: str = "", delay: float = DELAY, tick: float = 0.2
    ) -> None:
        self._stream = stream
        self._label = label
        self._delay = delay
        self._tick = tick
        self._phase = "starting"
        self._done: int | None = None
        self._total: int | None = None
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.drawn = 0

    def phase(self, name: str, done: int | None = None, total: int | None = None) -> None:
        with self._lock:
            self._phase, self._done, self._total = name, done, total

    def __enter__(self) -> Progress:
        if self._stream is not None:
            self._thread = threading.Thread(target=self._run, name="gitkrm-progress", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        assert self._stream is not None
        if self._stop.wait(self._delay):
            return
        while not self._stop.is_set():
            with self._lock:
                line = render(
                    self._phase, time.monotonic() - self._started, self._done, self._total
                )
            self._stream.write(f"\r{self._label}{line}\x1b[K")
            self._stream.flush()
            self.drawn += 1
            self._stop.wait(self._tick)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            if self.drawn and self._stream is not None:
                self._stream.write("\r\x1b[K")
                self._stream.flush()
