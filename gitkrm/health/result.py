"""Health verdicts: the kstatus statuses, one object's result and the aggregate of many."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Health(StrEnum):
    """kstatus's statuses (sigs.k8s.io/cli-utils/pkg/kstatus/status)."""

    CURRENT = "Current"
    IN_PROGRESS = "InProgress"
    FAILED = "Failed"
    TERMINATING = "Terminating"
    NOT_FOUND = "NotFound"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class HealthResult:
    """One object's verdict; `reason` is a CamelCase word (LessReady, ProgressDeadlineExceeded,
    ...) for programs, `message` a sentence for people."""

    status: Health
    message: str
    reason: str = ""


def current(message: str) -> HealthResult:
    return HealthResult(Health.CURRENT, message)


def in_progress(reason: str, message: str) -> HealthResult:
    return HealthResult(Health.IN_PROGRESS, message, reason)


def failed(reason: str, message: str) -> HealthResult:
    return HealthResult(Health.FAILED, message, reason)


def aggregate(results: Iterable[Health]) -> Health:
    """The health of a set of objects that should all be Current (kstatus's aggregator):
    Failed if any failed, else Unknown if any is unknown, Current when all are (or there are
    none), InProgress otherwise."""
    all_current = True
    unknown = False
    for h in results:
        if h == Health.FAILED:
            return Health.FAILED
        if h == Health.UNKNOWN:
            unknown = True
        elif h != Health.CURRENT:
            all_current = False
    if unknown:
        return Health.UNKNOWN
    return Health.CURRENT if all_current else Health.IN_PROGRESS
