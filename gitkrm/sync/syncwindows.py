"""Argo CD's sync windows (an AppProject's `spec.syncWindows`): when an Application may
sync. Pure: the time is given.

A window is active from each time its cron `schedule` fires (five fields, as Argo CD's
robfig/cron parser reads them: minute, hour, day of month, month, day of week; `*`, `?`,
lists, ranges, steps, month and day names; day of month and day of week OR-ed when both
are restricted) for its `duration` (Go's `1h30m`), in its `timeZone` (UTC by default).
`can_sync` is Argo CD's `SyncWindows.CanSync`: an active `deny` window blocks (a manual
sync passes when every deny window has `manualSync`); else an active `allow` window lets
it through; else an `allow` window that is not active blocks (manual as for deny); no
window: anything syncs. Which windows apply to an Application (`applications`,
`namespaces`, `clusters` globs, `andOperator`) is decided once, when it is read
(`matches`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MONTHS: Final = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                  "dec")  # fmt: skip
_DAYS: Final = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_NAMES: Final = {
    3: {m: i + 1 for i, m in enumerate(_MONTHS)},
    4: {d: i for i, d in enumerate(_DAYS)},
}
_BOUNDS: Final = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
MAX_SPAN: Final = timedelta(days=366)
"""A window longer than this is searched for its start over this span only."""


class WindowError(ValueError):
    """A window's schedule, duration or time zone that cannot be read (Argo CD refuses
    such a project)."""


@dataclass(frozen=True, slots=True)
class SyncWindow:
    """One window that applies to the Application (its `duration` read into seconds)."""

    kind: str  # "allow" or "deny"
    schedule: str
    seconds: float
    manual_sync: bool = False
    time_zone: str = ""


def _field(text: str, index: int) -> tuple[frozenset[int], bool]:
    """One cron field: its values, and whether it is `*` or `?` (robfig's star bit)."""
    low, high = _BOUNDS[index]
    names = _NAMES.get(index, {})

    def number(s: str) -> int:
        value = names.get(s.lower()) if not s.isdigit() else int(s)
        if value is None:
            raise WindowError(f"cannot parse {s!r}")
        if index == 4 and value == 7:
            value = 0  # Sunday, either way
        return value

    out: set[int] = set()
    star = False
    for part in text.split(","):
        rng, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1:
            raise WindowError(f"cannot parse step {part!r}")
        if rng in ("*", "?"):
            start, end = low, high
            star = not step_text
        elif "-" in rng:
            a, _, b = rng.partition("-")
            start, end = number(a), number(b)
        else:
            start = number(rng)
            end = high if step_text else start
        if start < low or end > high or start > end:
            raise WindowError(f"{part!r} is out of range {low}-{high}")
        out.update(range(start, end + 1, step))
    return frozenset(out), star


@lru_cache(maxsize=64)
def _schedule(text: str) -> tuple[tuple[frozenset[int], bool], ...]:
    fields = text.split()
    if len(fields) != 5:
        raise WindowError(f"cannot parse schedule {text!r}: expected 5 fields")
    try:
        return tuple(_field(f, i) for i, f in enumerate(fields))
    except WindowError as e:
        raise WindowError(f"cannot parse schedule {text!r}: {e}") from None
    except ValueError:
        raise WindowError(f"cannot parse schedule {text!r}") from None


def _fires(spec: tuple[tuple[frozenset[int], bool], ...], t: datetime) -> bool:
    (minutes, _), (hours, _), (doms, dom_star), (months, _), (dows, dow_star) = spec
    if t.minute not in minutes or t.hour not in hours or t.month not in months:
        return False
    dom, dow = t.day in doms, (t.isoweekday() % 7) in dows
    return (dom and dow) if dom_star or dow_star else (dom or dow)


def _zone(name: str) -> tzinfo:
    if not name or name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC  # Argo CD: an unknown zone is UTC (with a warning)


def active(window: SyncWindow, now: datetime) -> bool:
    """Whether `window` is open at `now`: its schedule fired within its duration."""
    spec = _schedule(window.schedule)
    duration = timedelta(seconds=window.seconds)
    local = now.astimezone(_zone(window.time_zone)).replace(second=0, microsecond=0)
    t = local
    earliest = local - min(duration, MAX_SPAN)
    while t > earliest:  # robfig's Next(now - duration) before now: a fire in (now-d, now]
        if _fires(spec, t):
            return True
        t -= timedelta(minutes=1)
    return False


def check(windows: Sequence[SyncWindow]) -> None:
    """WindowError for a window that cannot be read."""
    for w in windows:
        _schedule(w.schedule)
        if w.kind not in ("allow", "deny"):
            raise WindowError(f"kind {w.kind!r}: allow or deny")


def can_sync(windows: Sequence[SyncWindow], now: datetime, *, manual: bool) -> bool:
    """Argo CD's `SyncWindows.CanSync` (without sync overrun: gitkrm's syncs are short)."""
    if not windows:
        return True
    open_ = [w for w in windows if active(w, now)]
    denies = [w for w in open_ if w.kind == "deny"]
    if denies:
        return manual and all(w.manual_sync for w in denies)
    if any(w.kind == "allow" for w in open_):
        return True
    closed = [w for w in windows if w.kind == "allow" and w not in open_]
    if closed:
        return manual and all(w.manual_sync for w in closed)
    return True
