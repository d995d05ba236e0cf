"""A revision the engine can't apply at all, as a value (pure).

Any step of a pass may refuse a revision whole, before anything is written: the render's
problems, a guard (`guards`), admission, a failed inventory write. The refusal travels
back as this value rather than as an exception, so that `sync` reports it as a result
and `plan` as a plan with errors, both with the time spent finding out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gitkrm.sync.guards import Verdict
from gitkrm.sync.plan import Plan
from gitkrm.sync.results import SyncResult, make_result


@dataclass(frozen=True, slots=True)
class Refusal:
    """A revision that can't be applied at all: why, and the time spent finding out."""

    errors: tuple[str, ...]
    timings: dict[str, float]
    guard: str = ""  # the guard that refused it (sync.guards.Guard), if one did
    refused: Plan | None = None  # what the guard stopped

    def result(self, revision: str) -> SyncResult:
        return make_result(
            revision=revision, errors=self.errors, timings_ms=self.timings, guard=self.guard
        )

    def plan(self, revision: str) -> Plan:
        if self.refused is not None:
            return replace(self.refused, errors=self.errors, guard=self.guard)
        return Plan(
            revision=revision, steps=(), inventory=frozenset(), errors=self.errors,
            guard=self.guard,
        )  # fmt: skip


def guarded(
    verdict: Verdict | None, timings: dict[str, float], plan: Plan | None
) -> Refusal | None:
    """A guard's verdict as a refusal (None: the guard let the revision pass)."""
    if verdict is None:
        return None
    return Refusal((verdict.message,), timings, guard=verdict.guard, refused=plan)
