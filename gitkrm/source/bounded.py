"""A whole HTTP response body, bounded in size.

aiohttp's `StreamReader.read(n)` returns what is buffered (at most `n` bytes), not `n`
bytes: a body read with one call is cut at the first network chunk. Every bounded read of
a body goes through `read_bounded`."""

from __future__ import annotations

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
