"""What the sync engine needs from a source, whatever it is (Git remote, plain directory)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from .snapshot import Snapshot


@runtime_checkable
class Source(Protocol):
    """A revisioned tree of manifests.

    `poll` is cheap (one `ls-remote`, or a stat walk) and returns the revision the source is
    at now, or None when that can't be known without fetching; `snapshot` fetches only when
    the revision moved and otherwise returns the same `Snapshot` object as last time. On an
    error (unreachable remote, deleted branch, refused revision) `last` still holds the last
    good snapshot, readable, so the caller keeps the last synced state.
    """

    name: str

    @property
    def last(self) -> Snapshot | None: ...

    async def poll(self) -> str | None: ...

    async def snapshot(self) -> Snapshot: ...

    async def close(self) -> None: ...


@runtime_checkable
class WatchedSource(Source, Protocol):
    """A source that can tell when it changed, via watchfiles: a plain directory, or a Git
    repository on this machine (for a remote URL `changes()` ends at once)."""

    def changes(self) -> AsyncIterator[None]:
        """Yields once per debounced burst of changes, until `close`."""
        ...
