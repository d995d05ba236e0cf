from __future__ import annotations

import pytest

from gitkrm.agent.duration import format_duration, parse_duration
from gitkrm.errors import BadRequest


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("2h", 7200.0),
        ("1.5m", 90.0),
        ("0", 0.0),
        ("1h0m5s", 3605.0),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "30", "s", "1x", "1m 30s", "-5s", "abc"])
def test_not_durations_name_the_flag(text: str) -> None:
    with pytest.raises(BadRequest, match="--interval"):
        parse_duration(text, what="--interval")


@pytest.mark.parametrize("seconds", [0.25, 1, 30, 90, 3600, 3605, 5400, 1.5])
def test_format_round_trips(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)


def test_format_is_short() -> None:
    assert format_duration(90) == "1m30s"
    assert format_duration(0.5) == "500ms"
    assert format_duration(3600) == "1h"
