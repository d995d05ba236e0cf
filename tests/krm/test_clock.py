from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from gitkrm.krm.clock import now_micro, now_rfc3339, parse_time, parse_timestamp, rfc3339


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
