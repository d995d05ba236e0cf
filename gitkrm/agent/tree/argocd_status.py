"""An Application's status in Argo CD's own form, so `kubectl get applications` (its
Sync Status and Health Status columns) and tools reading Argo CD's status see what the
application-controller would write. Pure.

- `sync`: `status` Synced (the last sync applied the revision, or a comparison found
  nothing to do), OutOfSync (a comparison found differences: an Application without
  automated sync; or a sync is under way or failed), Unknown (nothing compared yet, the
  source can't be fetched, or the object can't be read); `revision`, `comparedTo` (the
  spec's source or sources, destination and ignoreDifferences, as written).
- `health.status` from gitkrm's aggregate health: Current → Healthy, InProgress and
  Terminating → Progressing, Failed → Degraded, NotFound → Missing, else Unknown; a
  suspended child is Suspended.
- `operationState` (automated syncs only): `phase` Running / Succeeded / Failed / Error
  (the object could not be read), `message`, `syncResult.revision` and `resources`,
  `startedAt`, `finishedAt`.
- `resources[]` (group, version, kind, namespace, name, status, and each object's health
  where known), `conditions` (InvalidSpecError, ComparisonError, SyncError, and
  `NotHonouredWarning` naming the fields gitkrm does not honour), `summary`,
  `reconciledAt`, `sourceType`.

Times change only when what they date changes, so writing the same state twice writes
nothing (the tree writes a status only when it differs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from gitkrm.health import Health
from gitkrm.krm import Obj, ObjectRef
from gitkrm.krm.clock import now_rfc3339
from gitkrm.source.redact import split_userinfo
from gitkrm.sync.appsource_spec import SourceType

from ..conditions import clip
from ..status import Reason
from .model import ChildState, Phase, Unhonoured

SYNCED: Final = "Synced"
OUT_OF_SYNC: Final = "OutOfSync"
UNKNOWN: Final = "Unknown"
INVALID_SPEC: Final = "InvalidSpecError"
COMPARISON_ERROR: Final = "ComparisonError"
SYNC_ERROR: Final = "SyncError"
NOT_HONOURED: Final = "NotHonouredWarning"
_HEALTH: Final = {
    Health.CURRENT: "Healthy",
    Health.IN_PROGRESS: "Progressing",
    Health.TERMINATING: "Progressing",
    Health.FAILED: "Degraded",
    Health.NOT_FOUND: "Missing",
    Health.UNKNOWN: "Unknown",
}


def health_status(state: ChildState) -> dict[str, Any]:
    if state.phase is Phase.SUSPENDED:
        return {"status": "Suspended"}
    outcome = state.outcome
    if state.health is None:
        if outcome is not None and any(d.startswith("create:") for d in outcome.out_of_sync or ()):
            return {"status": "Missing"}  # compared, not created
        if outcome is not None and outcome.succeeded and not state.inventory:
            return {"status": "Healthy"}  # nothing to be unhealthy
        return {"status": UNKNOWN}
    out: dict[str, Any] = {"status": _HEALTH.get(state.health, UNKNOWN)}
    if state.health_message and state.health is not Health.CURRENT:
        out["message"] = clip(state.health_message)
    return out


def sync_status(state: ChildState) -> str:
    outcome = state.outcome
    if state.error is not None and (outcome is None or state.spec is None):
        return UNKNOWN
    if outcome is None:
        return UNKNOWN
    if outcome.out_of_sync is not None:
        return OUT_OF_SYNC if outcome.out_of_sync else SYNCED
    if not outcome.succeeded and outcome.reason is Reason.SOURCE_FAILED:
        return UNKNOWN  # nothing to compare with (Argo CD's ComparisonError, Unknown)
    if state.phase is Phase.SYNCING or not outcome.succeeded:
        return OUT_OF_SYNC
    return SYNCED


def _version(ref: ObjectRef) -> str:
    return ref.version or ""


def _resource(ref: ObjectRef, status: str, health: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "group": ref.group,
        "version": _version(ref),
        "kind": ref.kind,
        "namespace": ref.namespace or "",
        "name": ref.name,
        "status": status,
    }
    if health is not None:
        out["health"] = {"status": health}
    return out


def _key(text: str) -> tuple[str, str]:
    """`op: Kind ns/name` of an outcome's differences as (kind, ns/name)."""
    _, _, what = text.partition(": ")
    kind, _, where = what.partition(" ")
    return kind, where


def resources(state: ChildState) -> list[dict[str, Any]]:
    outcome = state.outcome
    differ = {_key(d) for d in (outcome.out_of_sync or ())} if outcome is not None else set()
    healthy = health_status(state)["status"] == "Healthy"
    out = []
    for ref in state.inventory:
        where = f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
        status = OUT_OF_SYNC if (ref.kind, where) in differ else SYNCED
        known = state.object_health.get(ref)
        shown = _HEALTH.get(known, UNKNOWN) if known is not None else None
        out.append(_resource(ref, status, shown or ("Healthy" if healthy else None)))
    listed = {(ref.kind, f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name)
              for ref in state.inventory}  # fmt: skip
    for kind, where in sorted(differ - listed):  # not created yet
        ns, _, name = where.rpartition("/")
        out.append(
            {"group": "", "version": "", "kind": kind, "namespace": ns, "name": name,
             "status": OUT_OF_SYNC, "health": {"status": "Missing"}}
        )  # fmt: skip
    return sorted(out, key=lambda r: (r["group"], r["kind"], r["namespace"], r["name"]))


def _condition(
    previous: Sequence[Mapping[str, Any]], type_: str, message: str, now: str
) -> dict[str, Any]:
    """Argo CD's condition (type, message, lastTransitionTime), its time kept while the
    same condition stands."""
    for c in previous:
        if c.get("type") == type_ and c.get("message") == message:
            return {"type": type_, "message": message,
                    "lastTransitionTime": c.get("lastTransitionTime") or now}  # fmt: skip
    return {"type": type_, "message": message, "lastTransitionTime": now}


def unhonoured_message(items: Sequence[Unhonoured]) -> str:
    return clip("; ".join(f"{u.field}: {u.reason}" for u in items))


def conditions(state: ChildState, previous: Sequence[Mapping[str, Any]], now: str) -> list[Any]:
    out: list[dict[str, Any]] = []
    outcome = state.outcome
    if state.error is not None and state.spec is None:
        out.append(_condition(previous, INVALID_SPEC, clip(state.error), now))
    elif outcome is not None and not outcome.succeeded and outcome.errors:
        more = f" (and {len(outcome.errors) - 1} more)" if len(outcome.errors) > 1 else ""
        type_ = COMPARISON_ERROR if outcome.stalled or outcome.counts is None else SYNC_ERROR
        out.append(_condition(previous, type_, clip(str(outcome.errors[0]) + more), now))
    elif state.error is not None:
        out.append(_condition(previous, COMPARISON_ERROR, clip(state.error), now))
    unhonoured = state.unhonoured or (state.spec.unhonoured if state.spec is not None else ())
    if unhonoured:
        out.append(_condition(previous, NOT_HONOURED, unhonoured_message(unhonoured), now))
    return out


def _operation(
    state: ChildState, previous: Mapping[str, Any] | None, now: str, revision: str
) -> dict[str, Any] | None:
    """`operationState` of an automated sync (kept as it was while nothing changed)."""
    outcome = state.outcome
    if state.spec is not None and not state.spec.config.automated:
        return dict(previous) if previous else None
    if state.phase is Phase.SYNCING:
        phase, message = "Running", "sync in progress"
    elif outcome is None:
        if state.error is not None and state.spec is None:
            phase, message = "Error", clip(state.error)
        else:
            return dict(previous) if previous else None
    elif outcome.succeeded:
        phase, message = "Succeeded", "successfully synced (all tasks run)"
    else:
        phase = "Failed"
        message = clip(str(outcome.errors[0]) if outcome.errors else "sync failed")
    same = (
        previous is not None
        and previous.get("phase") == phase
        and previous.get("message") == message
        and (previous.get("syncResult") or {}).get("revision", "") == revision
    )
    started = previous.get("startedAt") if same and previous is not None else now
    op: dict[str, Any] = {
        "operation": {"sync": {"revision": revision}, "initiatedBy": {"automated": True}},
        "phase": phase,
        "message": message,
        "startedAt": started,
    }
    if phase != "Running":
        op["finishedAt"] = previous.get("finishedAt", now) if same and previous else now
        op["syncResult"] = {
            "revision": revision,
            "resources": [
                {**_resource(ref, SYNCED, None), "message": "", "syncPhase": "Sync",
                 "status": "Synced" if phase == "Succeeded" else "SyncFailed"}
                for ref in state.inventory
            ],
        }  # fmt: skip
    return op


def _safe_source(source: Any) -> Any:
    if not isinstance(source, Mapping) or not isinstance(source.get("repoURL"), str):
        return source
    return {**source, "repoURL": split_userinfo(source["repoURL"]).url}


def _compared_to(obj: Obj, state: ChildState) -> dict[str, Any]:
    """Argo CD's: the spec's source (or sources), destination and ignoreDifferences as
    written (user-info left out of repository URLs)."""
    if state.spec is None:
        return {}
    spec: Mapping[str, Any] = obj.get("spec") or {}
    out: dict[str, Any] = {}
    if spec.get("sources"):
        out["sources"] = [_safe_source(s) for s in spec["sources"]]
    elif spec.get("source"):
        out["source"] = _safe_source(spec["source"])
    out["destination"] = spec.get("destination") or {}
    if spec.get("ignoreDifferences"):
        out["ignoreDifferences"] = spec["ignoreDifferences"]
    return out


def _source_type(state: ChildState) -> str | None:
    spec = state.spec
    app = spec.config.app_source if spec is not None else None
    if app is None or app.source_type is SourceType.AUTO:
        return None
    return str(app.source_type)


def _refused(state: ChildState, previous: Mapping[str, Any], now: str) -> Obj:
    """Argo CD's status of an Application its project refuses: its conditions (one per
    refusal, Argo CD's type and message), sync and health Unknown; what an earlier
    reconciliation wrote (resources, operationState) stays, as Argo CD leaves it."""
    assert state.spec is not None
    kept = previous.get("conditions") or []
    conds = [_condition(kept, r.reason, clip(r.message), now) for r in state.spec.refused]
    if state.spec.unhonoured:
        conds.append(_condition(kept, NOT_HONOURED, unhonoured_message(state.spec.unhonoured), now))
    sync = {k: v for k, v in (previous.get("sync") or {}).items() if k != "status"}
    status: dict[str, Any] = {
        **previous,
        "sync": {"status": UNKNOWN, **sync},
        "health": {"status": UNKNOWN},
        "conditions": conds,
    }
    status.setdefault("resources", [])
    status.setdefault("summary", {})
    status["reconciledAt"] = previous.get("reconciledAt") or now
    return status


def application_status(obj: Obj, state: ChildState) -> Obj:
    """The Application's whole `status` for `state` (see the module docstring)."""
    previous: Mapping[str, Any] = obj.get("status") or {}
    now = now_rfc3339()
    if state.phase is Phase.REFUSED and state.spec is not None:
        return _refused(state, previous, now)
    outcome = state.outcome
    revision = (outcome.revision if outcome is not None else None) or ""
    sync: dict[str, Any] = {"status": sync_status(state)}
    if revision:
        sync["revision"] = revision
    compared = _compared_to(obj, state)
    if compared:
        sync["comparedTo"] = compared
    status: dict[str, Any] = {
        "sync": sync,
        "health": health_status(state),
        "resources": resources(state),
        "summary": dict(previous.get("summary") or {}),
    }
    source_type = _source_type(state)
    if source_type:
        status["sourceType"] = source_type
    conds = conditions(state, previous.get("conditions") or [], now)
    if conds:
        status["conditions"] = conds
    op = _operation(state, previous.get("operationState"), now, revision)
    if op is not None:
        status["operationState"] = op
    # reconciledAt moves only when the comparison's result does.
    same = all(previous.get(k) == status.get(k) for k in ("sync", "health", "resources"))
    status["reconciledAt"] = previous.get("reconciledAt") if same and previous else now
    return status
