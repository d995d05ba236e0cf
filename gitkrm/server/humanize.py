"""Ages and durations as kubectl shows them (apimachinery's duration.HumanDuration)."""

from __future__ import annotations

from gitkrm.krm.clock import parse_timestamp


def _and_rest(count: int, unit: str, rest: int, rest_unit: str) -> str:
    """`3m` or `3m20s`: the smaller unit only when it is not 0."""
    return f"{count}{unit}{rest}{rest_unit}" if rest else f"{count}{unit}"


def human_duration(seconds: float) -> str:
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return _and_rest(minutes, "m", s % 60, "s")
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return _and_rest(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return _and_rest(hours // 24, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        return _and_rest(hours // 24 // 365, "y", (hours // 24) % 365, "d")
    return f"{hours // 24 // 365}y"


def since(value: object, now: float) -> str:
    """`translateTimestampSince`: the age of a timestamp, `<unknown>` when there is none."""
    t = parse_timestamp(value)
    if t is None:
        return "<unknown>"
    return human_duration(now - t)
