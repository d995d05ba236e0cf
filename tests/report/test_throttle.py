from __future__ import annotations

import pytest

from gitkrm.report.throttle import Throttle


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_first_write_goes_at_once_then_one_per_interval() -> None:
    clock = Clock()
    t = Throttle(5.0, clock=clock)
    assert t.ready("note-a")
    t.mark("note-a")
    assert not t.ready("note-a")
    assert t.ready("note-b")  # per key
    assert t.ready_at("note-a") == 105.0
    clock.now = 104.9
    assert not t.ready("note-a")
    clock.now = 105.0
    assert t.ready("note-a")


def test_old_keys_are_forgotten() -> None:
    clock = Clock()
    t = Throttle(1.0, clock=clock)
    for i in range(100):
        clock.now += 0.5
        t.mark(i)
    assert len(t._last) <= 66
    assert not t.ready(99)


def test_negative_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        Throttle(-1)
