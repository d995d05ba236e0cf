"""File events that move a source's revision: what `changes()` of a source on this machine
yields (a local directory, a local clone's refs).

watchfiles is imported when a watch starts: only a long-lived agent watches (not
`validate`, `run --once`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gitkrm.errors import GitkrmError

if TYPE_CHECKING:
    import watchfiles


async def revision_moves(
    path: str | Path,
    *,
    poll: Callable[[], Awaitable[str | None]],
    seen: str | None,
    stop: asyncio.Event,
    watch_filter: Callable[[watchfiles.Change, str], bool],
    debounce: int,
) -> AsyncIterator[None]:
    """Yield after each debounced burst of events under `path` that moved the revision
    `poll` reads (from `seen`), or broke it (a GitkrmError); until `stop` is set."""
    import watchfiles

    async for _ in watchfiles.awatch(
        path,
        debounce=debounce,
        step=50,
        stop_event=stop,
        watch_filter=watch_filter,
        yield_on_timeout=False,
    ):
        try:
            revision = await poll()
        except GitkrmError:
            revision = None
        if revision is None or revision != seen:
            seen = revision
            yield None
