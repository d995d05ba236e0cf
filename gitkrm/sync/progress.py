"""How a long sync reports how far it got: a callback the agent draws a bar from.

`progress(phase, done, total)`: the phase (`rendering`, `planning`, `applying`, `pruning`)
and, where the phase knows it, how many of how many objects are done. The engine calls it
between store batches, so the cost is one call per chunk, never per object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

ProgressFn = Callable[[str, int | None, int | None], None]

CHUNK: Final = 500
"""Writes per store batch: big enough to keep one transaction per few hundred objects,
small enough that a bar moves (and that a failing batch is retried object by object over
at most this many objects)."""


def no_progress(phase: str, done: int | None = None, total: int | None = None) -> None:
    """The default: report nothing."""
