"""The progress line of long syncs: drawn from a thread after a delay, then erased."""

from __future__ import annotations

import io
import threading

from gitkrm.agent.progress import Progress, render


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
