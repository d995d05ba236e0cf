"""Times as Kubernetes writes them: metav1.Time (RFC 3339, seconds, `Z`) and MicroTime.

One place for "now" and for reading a timestamp back, so that every object gitkrm writes
(store metadata, conditions, notes) spells time the same way.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

_last_second = -1
_last_stamp = ""


def rfc3339(t: datetime) -> str:
    """`2024-01-02T03:04:05Z`: metav1.Time (seconds precision, UTC)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339() -> str:
    """Now as metav1.Time, formatted once per second (a batch of 10,000 creates shares it)."""
    global _last_second, _last_stamp
    second = int(time.time())
    if second != _last_second:
        _last_stamp = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _last_second = second
    return _last_stamp


def now_micro() -> str:
    """Now as metav1.MicroTime (a Lease's renewTime)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 timestamp (aware, UTC when it names no zone); None when absent or
    malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def parse_timestamp(value: object) -> float | None:
    """An RFC 3339 timestamp as seconds since the epoch (None when absent or malformed)."""
    parsed = parse_time(value)
    return parsed.timestamp() if parsed is not None else None
