"""Argo CD's sync windows: when a window is open (its cron schedule, duration and time
zone) and whether a sync may run (`CanSync`), at fixed times."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gitkrm.sync.syncwindows import SyncWindow, WindowError, active, can_sync, check

HOUR = 3600.0
# Wednesday 2026-03-04 22:30 UTC
WED_2230 = datetime(2026, 3, 4, 22, 30, tzinfo=UTC)


def window(kind: str, schedule: str, hours: float = 1, **kw: object) -> SyncWindow:
    return SyncWindow(kind=kind, schedule=schedule, seconds=hours * HOUR, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("schedule", "hours", "expected"),
    [
        ("0 22 * * *", 1, True),  # fired at 22:00, open for an hour
        ("0 22 * * *", 0.25, False),  # closed at 22:15
        ("0 23 * * *", 1, False),  # not yet
        ("0 22 * * 3", 1, True),  # Wednesday
        ("0 22 * * wed", 1, True),
        ("0 22 * * 1-2,4-6", 1, False),  # every day but Wednesday and Sunday
        ("0 22 * * 0", 1, False),  # Sunday ...
        ("0 22 * * 7", 1, False),  # ... either way
        ("0 22 4 * 1", 1, True),  # day of month OR day of week when both are restricted
        ("0 22 5 * *", 1, False),
        ("0 22 * mar *", 1, True),
        ("*/20 * * * *", 0.2, True),  # 22:20, open 12 minutes
        ("0 0 * * *", 24, True),  # a whole day
        ("0 20-21 * * *", 2, True),  # 21:00 + 2h
        ("0 20-21 * * *", 1, False),  # 21:00 + 1h: closed at 22:00
        ("30 22 * * *", 1, True),  # fired right now
    ],
)
def test_a_window_is_open_for_its_duration_after_its_schedule_fires(
    schedule: str, hours: float, expected: bool
) -> None:
    assert active(window("deny", schedule, hours), WED_2230) is expected


def test_a_window_fires_in_its_time_zone() -> None:
    # 22:30 UTC is 23:30 in Paris (CET): a window at 23:00 Paris time is open
    paris = window("deny", "0 23 * * *", time_zone="Europe/Paris")
    assert active(paris, WED_2230)
    assert not active(window("deny", "0 23 * * *"), WED_2230)


def test_can_sync_as_argo_cd_decides() -> None:
    deny = window("deny", "0 22 * * *")
    deny_manual = window("deny", "0 22 * * *", manual_sync=True)
    allow_now = window("allow", "0 22 * * *")
    allow_later = window("allow", "0 6 * * *")
    allow_later_manual = window("allow", "0 6 * * *", manual_sync=True)
    assert can_sync([], WED_2230, manual=False)
    assert not can_sync([deny], WED_2230, manual=False)
    assert not can_sync([deny], WED_2230, manual=True)
    assert can_sync([deny_manual], WED_2230, manual=True)
    assert not can_sync([deny_manual, deny], WED_2230, manual=True)  # every deny must allow
    assert not can_sync([deny, allow_now], WED_2230, manual=False)  # deny wins
    assert can_sync([allow_now, allow_later], WED_2230, manual=False)  # one allow open
    assert not can_sync([allow_later], WED_2230, manual=False)  # outside every allow
    assert can_sync([allow_later_manual], WED_2230, manual=True)
    assert can_sync([window("deny", "0 6 * * *")], WED_2230, manual=False)  # closed deny


@pytest.mark.parametrize(
    "schedule", ["@daily", "0 22 * *", "61 * * * *", "0 22 * * mon-", "a b c d e", "0 22 */0 * *"]
)
def test_a_schedule_argo_cd_cannot_parse_is_an_error(schedule: str) -> None:
    with pytest.raises(WindowError):
        check([window("deny", schedule)])


def test_a_kind_is_allow_or_deny() -> None:
    with pytest.raises(WindowError):
        check([window("block", "0 22 * * *")])
