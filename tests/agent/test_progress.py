"""The progress line of long syncs: drawn from a thread after a delay, then erased."""

from __future__ import annotations

import asyncio
import io
import threading
from typing import Any, cast

from gitkrm.agent.progress import Progress, render
from gitkrm.store import Store, open_store
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.progress import CHUNK
from tests.sync.sync_helpers import snapshot


def test_render_with_and_without_a_total() -> None:
    assert render("syncing", 4.25, 5, 10) == "syncing   [###############...............] 5/10  4.2s"
    assert render("fetching", 0.5) == "fetching   0.5s"


class _Stream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.wrote = threading.Event()

    def write(self, s: str) -> int:
        self.wrote.set()
        return super().write(s)


def test_line_is_drawn_while_the_sync_runs_and_erased_after() -> None:
    out = _Stream()
    with Progress(out, label="apps: ", delay=0.0, tick=0.01) as p:
        p.phase("syncing", 3, 6)
        assert out.wrote.wait(5)
    text = out.getvalue()
    assert "\rapps: " in text
    assert text.endswith("\r\x1b[K")
    assert p.drawn >= 1


def test_quick_syncs_and_no_terminal_draw_nothing() -> None:
    out = _Stream()
    with Progress(out, delay=3600) as p:
        p.phase("syncing")
    assert out.getvalue() == ""
    with Progress(None, delay=0.0) as p:
        p.phase("syncing")
    assert p.drawn == 0


class _GatedStore:
    """The real store, with the batch of `hold` writes held until the test releases it."""

    def __init__(self, store: Store, *, hold: int) -> None:
        self._store = store
        self.hold = hold
        self.release = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def batch(self, ops: Any, **kw: Any) -> Any:
        if len(ops) == self.hold:
            await asyncio.wait_for(self.release.wait(), 30)
        return await self._store.batch(ops, **kw)


async def test_a_long_sync_draws_a_bar_of_writes_done_of_total() -> None:
    n = CHUNK + 300
    docs = "".join(
        f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}, namespace: default}}\n"
        for i in range(n)
    )
    store = await open_store("sqlite:///:memory:")
    gated = _GatedStore(store, hold=n - CHUNK)
    engine = SyncEngine(
        store=cast(Store, gated), options=SyncOptions(source_name="src", agent_name="a")
    )
    out = _Stream()
    try:
        with Progress(out, label="src: ", delay=0.0, tick=0.01) as p:
            task = asyncio.create_task(engine.sync(snapshot({"cms.yaml": docs}), progress=p.phase))
            want = f"] {CHUNK}/{n}"
            for _ in range(3000):  # the bar shows the first chunk done while the second waits
                if want in out.getvalue() or task.done():
                    break
                await asyncio.sleep(0.01)
            assert want in out.getvalue()
            assert "src: applying  [" in out.getvalue()
            gated.release.set()
            result = await asyncio.wait_for(task, 30)
        assert result.ok, result.errors
        assert out.getvalue().endswith("\r\x1b[K")
    finally:
        gated.release.set()
        await engine.close()
        await store.close()
