"""A pass's outcome as the GitSource status shows it, from a sync result, a plan or an error.

Pure functions of what the engine or the source gave back: which reason, whether the
revision itself is at fault (Stalled), what a comparison found to differ.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gitkrm.errors import GitkrmError
from gitkrm.source import InvalidRevision, PathNotFound, UntrustedRevision
from gitkrm.sync.results import Counts, SyncResult, SyncStatus
from gitkrm.sync.steps import WRITES, Op

from . import status as st

if TYPE_CHECKING:
    from gitkrm.sync.plan import Plan

REVISION_ERRORS = (InvalidRevision, UntrustedRevision, PathNotFound)
"""The errors that say the revision itself can't be used (the source is Stalled)."""


def outcome_of(result: SyncResult) -> st.Outcome:
    """A sync result as the status shows it; any failed or refused object fails the sync."""
    counts = result.counts
    ok = result.status is SyncStatus.SUCCEEDED and not counts.bad and not result.errors
    errors = result.problems()
    applied = counts.changed or counts.unchanged > 0
    stalled = not ok and not applied and not counts.bad  # the revision itself was refused
    reason = st.Reason.SUCCEEDED if ok else st.Reason.SYNC_FAILED
    if stalled:
        reason = st.Reason.INVALID_REVISION
    if result.guard == st.Reason.PRUNE_BUDGET_EXCEEDED:
        reason = st.Reason.PRUNE_BUDGET_EXCEEDED
    hooks = None
    if result.hooks:
        hooks = {"revision": result.revision, "runs": [h.to_dict() for h in result.hooks]}
    return st.Outcome(
        revision=result.revision,
        succeeded=ok,
        reason=reason,
        counts=counts,
        timings_ms=result.timings_ms,
        errors=tuple(errors),
        stalled=stalled,
        hooks=hooks,
        warnings=result.warnings,
        releases=result.releases,
    )


def outcome_of_error(e: GitkrmError, *, revision: str | None) -> st.Outcome:
    """A source or engine error as a failed outcome (Stalled when the revision is at fault)."""
    stalled = isinstance(e, REVISION_ERRORS)
    return st.Outcome(
        revision=getattr(e, "revision", None) or revision,
        succeeded=False,
        reason=st.Reason.INVALID_REVISION if stalled else st.Reason.SOURCE_FAILED,
        errors=(e.message,),
        stalled=stalled,
    )


def outcome_of_plan(plan: Plan, *, revision: str) -> st.Outcome:
    """A comparison (the revision planned, nothing written): what differs, or why the
    revision can't be planned (Stalled)."""
    if plan.errors:
        return st.Outcome(
            revision=revision,
            succeeded=False,
            reason=st.Reason.SYNC_FAILED,
            errors=plan.errors,
            stalled=True,
        )
    differ = tuple(
        f"{s.op}: {s.ref.kind} {s.ref.namespace + '/' if s.ref.namespace else ''}{s.ref.name}"
        for s in plan.steps
        if s.op in WRITES or s.op in (Op.REFUSE, Op.FAIL)
    )
    return st.Outcome(
        revision=revision, succeeded=True, reason=st.Reason.SUCCEEDED, out_of_sync=differ
    )


def changed(counts: Counts | None) -> bool:
    """Whether a pass changed anything, or found a bad object."""
    return counts is not None and (counts.changed or counts.bad > 0)


def with_timing(outcome: st.Outcome, *, git: float) -> st.Outcome:
    """The outcome with the time spent fetching from Git."""
    return replace(outcome, timings_ms=replace(outcome.timings_ms, git=round(git, 3)))
