"""Events on a GitSource when its sync outcome changes, as Flux's controllers record
`ReconciliationSucceeded` / `ReconciliationFailed` on a Kustomization, so
`kubectl describe gitsource NAME` and `kubectl get events` show how syncs went.

One Event per change of the outcome (succeeded or not, the reason, the revision, the first
error), none for a pass that ends as the last one did (a periodic poll or drift check with
nothing new). They are written to the target store, embedded or a cluster, through the same
recorder the bundled controllers use (so a repeat of an older outcome counts up).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gitkrm.krm import Obj
from gitkrm.store import Store
from gitkrm.store.events import EventKind, EventRecorder

from . import status as st

log = logging.getLogger("gitkrm.agent")

COMPONENT = "gitkrm"


def outcome_event(outcome: st.Outcome) -> tuple[EventKind, str, str]:
    """The Event of an outcome: its type, reason and message."""
    revision = outcome.revision or "-"
    if outcome.reason is st.Reason.SUSPENDED:
        return EventKind.NORMAL, "ReconciliationSuspended", "Reconciliation is suspended"
    if outcome.succeeded:
        if outcome.out_of_sync is not None:
            return (
                EventKind.NORMAL,
                "ReconciliationSucceeded",
                f"Compared revision {revision}: {len(outcome.out_of_sync)} objects out of sync "
                "(not applied)",
            )
        counts = outcome.counts
        done = (
            f": {counts.created} created, {counts.configured} configured, "
            f"{counts.pruned} pruned, {counts.unchanged} unchanged"
            if counts is not None
            else ""
        )
        return EventKind.NORMAL, "ReconciliationSucceeded", f"Applied revision {revision}{done}"
    errors = list(outcome.errors)
    detail = errors[0] if errors else str(outcome.reason)
    if len(errors) > 1:
        detail += f" (and {len(errors) - 1} more)"
    return EventKind.WARNING, "ReconciliationFailed", f"{outcome.reason}: {detail}"


class OutcomeEvents:
    """The Events of one source's outcomes."""

    def __init__(self, store: Store, *, on_written: Callable[[Obj], None] | None = None) -> None:
        self.recorder = EventRecorder(store=store, on_written=on_written)
        self._last: tuple[object, ...] | None = None

    async def record(self, source: Obj, outcome: st.Outcome) -> None:
        """An Event on `source` (the GitSource as last written) when `outcome` differs from
        the last one recorded; written at once (never raises: Events are best effort)."""
        key = (outcome.succeeded, outcome.reason, outcome.revision, tuple(outcome.errors[:1]))
        if key == self._last:
            return
        self._last = key
        kind, reason, message = outcome_event(outcome)
        self.recorder.record(source, kind=kind, reason=reason, message=message, component=COMPONENT)
        await self.recorder.write_now()
