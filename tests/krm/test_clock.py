from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from gitkrm.krm import clock as clocks
from gitkrm.krm.clock import (
    WALL,
    VirtualClock,
    now_micro,
    now_of,
    now_rfc3339,
    parse_time,
    parse_timestamp,
    rfc3339,
    stamp_micro,
)


def test_now_is_metav1_time() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", now_rfc3339())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", now_micro())
    stamp = parse_time(now_rfc3339())
    assert stamp is not None
    assert abs((datetime.now(UTC) - stamp).total_seconds()) < 5


def test_rfc3339_is_utc_seconds() -> None:
    t = datetime(2024, 1, 2, 5, 4, 5, 999, tzinfo=timezone(timedelta(hours=2)))
    assert rfc3339(t) == "2024-01-02T03:04:05Z"


def test_parse_back() -> None:
    assert parse_time("2024-01-02T03:04:05Z") == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert parse_time("2024-01-02T03:04:05") == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert parse_timestamp("1970-01-01T00:01:00Z") == 60.0
    for bad in (None, "", "yesterday", 5):
        assert parse_time(bad) is None
        assert parse_timestamp(bad) is None


def test_a_virtual_clock_moves_only_when_advanced_and_calls_its_timers_in_order() -> None:
    clock = VirtualClock(1000.0)
    seen: list[tuple[str, float]] = []
    clock.call_later(30, lambda: seen.append(("b", clock.time())))
    clock.call_later(10, lambda: seen.append(("a", clock.time())))
    dropped = clock.call_later(20, lambda: seen.append(("dropped", clock.time())))
    dropped.cancel()
    assert (clock.time(), clock.next_due()) == (1000.0, 1010.0)
    assert clock.advance(1015.0) == 1
    assert seen == [("a", 1010.0)]  # each timer reads its own time
    assert (clock.time(), clock.next_due()) == (1015.0, 1030.0)
    assert clock.advance(2000.0) == 1
    assert seen == [("a", 1010.0), ("b", 1030.0)]
    assert (clock.time(), clock.next_due()) == (2000.0, None)
    clock.advance(10.0)  # never back
    assert clock.time() == 2000.0


def test_stamps_of_a_clock() -> None:
    clock = VirtualClock(1_800_000_000.25)
    assert clocks.stamp(clock) == "2027-01-15T08:00:00Z"
    assert stamp_micro(clock) == "2027-01-15T08:00:00.250000Z"
    assert now_of(clock).isoformat() == "2027-01-15T08:00:00.250000+00:00"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", clocks.stamp(WALL))
