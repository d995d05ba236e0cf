"""The status of a GitSource: last synced revision, counts, last error and kstatus conditions.

Conditions follow kstatus and Flux: `Ready` is always there (True after a good sync, False
after a failed one); `Reconciling` is True only while a sync is under way; `Stalled` is True
only when the failure is in the revision itself (invalid manifests, an untrusted commit), so
retrying cannot help until the source moves. Abnormal-true conditions are removed rather
than set False, as kstatus recommends. Building a status is pure; `StatusWriter` stores it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gitkrm.errors import Conflict, NotFound
from gitkrm.krm import Obj, ObjectRef, masking
from gitkrm.store import Store
from gitkrm.sync.results import Counts, Timings

from .conditions import MAX_MESSAGE as MAX_MESSAGE
from .conditions import Conditions, clip
from .crd import GROUP, KIND, NAMESPACE

READY = "Ready"
RECONCILING = "Reconciling"
STALLED = "Stalled"
MAX_ERRORS = 20


class Reason(StrEnum):
    SUCCEEDED = "Succeeded"
    PROGRESSING = "Progressing"
    SYNC_FAILED = "SyncFailed"
    INVALID_REVISION = "InvalidRevision"
    PRUNE_BUDGET_EXCEEDED = "PruneBudgetExceeded"  # sync.guards: waits for a trailer
    SOURCE_FAILED = "SourceFailed"
    INVALID_SPEC = "InvalidSpec"
    SUSPENDED = "Suspended"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one sync attempt came to, in the terms the status shows."""

    revision: str | None
    succeeded: bool
    reason: Reason
    counts: Counts | None = None
    """The sync's own counts; None when no sync ran (a source or spec error)."""
    timings_ms: Timings = Timings()
    errors: Sequence[str] = ()
    stalled: bool = False
    nothing_changed: bool = False
    """Not synced again: neither the revision nor the store changed since the last sync
    (`run --once`, see `lastsync`)."""
    hooks: Mapping[str, Any] | None = None
    """The hooks run for the revision (`status.hooks`); None when this sync ran none."""
    warnings: Sequence[str] = ()
    """Annotations of Flux and Argo CD that gitkrm does not honour."""
    releases: Sequence[Mapping[str, str]] = ()
    """The Helm releases the sync rendered (`Release.to_report`: chart, version, digest);
    empty when nothing was rendered (or nothing changed)."""
    out_of_sync: Sequence[str] | None = None
    """Compared, not applied (`SourceConfig.automated` False, or a drift not healed): what
    differs from the revision (`create: Kind ns/name`, ...); None when the sync applied."""


def short(revision: str | None) -> str:
    """A commit's first 12 hex digits; `name@algo:<12 hex>` for an artifact's revision."""
    if not revision:
        return "-"
    name, at, digest = revision.rpartition("@")
    algo, colon, hexes = digest.partition(":")
    if colon:
        return f"{name}{at}{algo}:{hexes[:12]}"
    return revision[:12]


def summary(counts: Counts | None) -> str:
    return ", ".join(f"{n} {k}" for k, n in (counts or Counts()).shown().items())


def progressing(
    previous: Mapping[str, Any], *, revision: str | None, generation: int, now: str
) -> dict[str, Any]:
    """The status while a sync runs: Reconciling True; Ready and the rest as they were."""
    status = copy.deepcopy(dict(previous))
    conds = Conditions(status.setdefault("conditions", []), generation=generation, now=now)
    message = f"syncing revision {short(revision)}" if revision else "fetching the source"
    conds.set(RECONCILING, "True", Reason.PROGRESSING, message)
    if conds.get(READY) is None:
        conds.set(READY, "Unknown", Reason.PROGRESSING, message)
    status["conditions"] = conds.items
    return status


def finished(
    previous: Mapping[str, Any],
    outcome: Outcome,
    *,
    generation: int,
    now: str,
    requested_at: str | None = None,
) -> dict[str, Any]:
    """The status after a sync attempt."""
    status = copy.deepcopy(dict(previous))
    conds = Conditions(status.setdefault("conditions", []), generation=generation, now=now)
    conds.drop(RECONCILING)
    status["observedGeneration"] = generation
    status["lastSyncTime"] = now
    status["result"] = "Succeeded" if outcome.succeeded else "Failed"
    if outcome.revision:
        status["lastAttemptedRevision"] = outcome.revision
    if outcome.counts is not None:
        status["counts"] = outcome.counts.shown()
    if outcome.timings_ms != Timings():
        status["timingsMs"] = {k: round(v, 1) for k, v in outcome.timings_ms.items()}
    if requested_at is not None:
        status["lastHandledRequestedAt"] = requested_at
    if outcome.hooks is not None:
        status["hooks"] = dict(outcome.hooks)
    if outcome.warnings:
        status["warnings"] = [clip(w) for w in outcome.warnings[:MAX_ERRORS]]
    elif outcome.counts is not None:
        status.pop("warnings", None)
    errors = [clip(masking.mask(e)) for e in outcome.errors[:MAX_ERRORS]]
    if outcome.succeeded:
        if outcome.revision:
            status["lastSyncedRevision"] = outcome.revision
        status.pop("lastError", None)
        status.pop("errors", None)
        message = f"synced revision {short(outcome.revision)}: {summary(outcome.counts)}"
        if outcome.out_of_sync is not None:
            status["outOfSync"] = [clip(d) for d in outcome.out_of_sync[:MAX_ERRORS]]
            message = f"compared revision {short(outcome.revision)}: " + (
                f"{len(outcome.out_of_sync)} object(s) differ, not applied"
                if outcome.out_of_sync
                else "in sync"
            )
        else:
            status.pop("outOfSync", None)
        conds.set(READY, "True", Reason.SUCCEEDED, message)
        conds.drop(STALLED)
    else:
        first = errors[0] if errors else "sync failed"
        more = f" (and {len(outcome.errors) - 1} more)" if len(outcome.errors) > 1 else ""
        status["lastError"] = first
        status["errors"] = errors
        message = f"revision {short(outcome.revision)}: {first}{more}"
        conds.set(READY, "False", outcome.reason, message)
        if outcome.stalled:
            conds.set(STALLED, "True", outcome.reason, message)
        else:
            conds.drop(STALLED)
    status["conditions"] = conds.items
    return status


def gitsource_ref(name: str) -> ObjectRef:
    return ObjectRef(group=GROUP, kind=KIND, name=name, namespace=NAMESPACE)


class StatusWriter:
    """Writes one GitSource's status through the status subresource, re-reading on Conflict
    (someone edited the spec meanwhile) and re-creating the object if it was deleted."""

    def __init__(self, store: Store, *, desired: Obj) -> None:
        self._store = store
        self._desired = desired
        self.ref = gitsource_ref(desired["metadata"]["name"])

    async def write(self, status: Mapping[str, Any]) -> Obj:
        for _ in range(5):
            try:
                live = await self._store.get(self.ref)
            except NotFound:
                live = await self._store.create(copy.deepcopy(self._desired))
            body = {**live, "status": dict(status)}
            try:
                return await self._store.update_status(body)
            except (Conflict, NotFound):
                continue
        raise Conflict(f"GitSource {self.ref.name}: status kept conflicting with other writers")
