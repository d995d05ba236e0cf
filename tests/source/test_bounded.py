"""A body of several network chunks is read whole, and refused past its limit (one
`read(n)` returned only the first chunk: a chart repository's index or archive, or an OCI
layer, was cut short)."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from gitkrm.source.bounded import read_bounded

BODY = bytes(range(256)) * 12_000  # 3 MiB, many chunks


async def test_a_large_body_is_read_to_its_end_and_bounded() -> None:
    async def serve(_: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(_)
        for i in range(0, len(BODY), 50_000):  # written in pieces, as a network delivers
            await response.write(BODY[i : i + 50_000])
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/") as r:
                assert await read_bounded(r.content, len(BODY)) == BODY
            async with session.get(f"http://127.0.0.1:{port}/") as r:
                assert await read_bounded(r.content, len(BODY) - 1) is None
    finally:
        await runner.cleanup()
