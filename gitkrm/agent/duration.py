"""Durations written as Go writes them (`30s`, `1m30s`, `500ms`, `2h`), as Flux and kubectl do.

Configuration files and flags share one syntax, so an interval copied from a Flux manifest
means the same here.
"""

from __future__ import annotations

import re

from gitkrm.errors import BadRequest

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
DURATION_PATTERN = r"^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+)$"
"""The same syntax as a JSON Schema pattern (the GitSource CRD validates with it)."""


def parse_duration(text: str, *, what: str = "duration") -> float:
    """Seconds in a Go duration string; BadRequest naming `what` otherwise."""
    s = text.strip() if isinstance(text, str) else ""
    if s == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not s or pos != len(s):
        raise BadRequest(
            f"{what} {text!r} is not a duration (use a number and a unit: 30s, 5m, 1h30m, 500ms)"
        )
    return total


def format_duration(seconds: float) -> str:
    """The shortest Go-style spelling of a duration (`90` -> `1m30s`, `0.5` -> `500ms`)."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    whole = int(seconds)
    frac = seconds - whole
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "")
    if s or frac or not out:
        sec = f"{s + frac:.3f}".rstrip("0").rstrip(".") if frac else str(s)
        out += f"{sec}s"
    return out
