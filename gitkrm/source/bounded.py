"""A whole HTTP response body, bounded in size, and the session the clients read it with.

aiohttp's `StreamReader.read(n)` returns what is buffered (at most `n` bytes), not `n`
bytes: a body read with one call is cut at the first network chunk. Every bounded read of
a body goes through `read_bounded`. `SessionClient` is the `async with` life of one
aiohttp session with a total timeout per request (the registry and Git host clients)."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import aiohttp

CHUNK: Final = 64 * 1024


async def read_bounded(stream: aiohttp.StreamReader, limit: int) -> bytes | None:
    """The body to its end, or None as soon as it is past `limit` bytes."""
    parts: list[bytes] = []
    size = 0
    async for chunk in stream.iter_chunked(CHUNK):
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
    return b"".join(parts)


class SessionClient:
    """An `async with` client of one aiohttp session, opened on entry with `timeout`
    seconds per request and closed on exit."""

    _session: aiohttp.ClientSession | None = None

    def _open(self, timeout: float) -> None:
        import aiohttp

        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
