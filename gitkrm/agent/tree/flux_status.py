"""The status of Flux's objects in Flux's own form, so `kubectl get kustomizations` and
`flux get` tooling read what kustomize-controller would write.

Kustomization: `Ready` (True `ReconciliationSucceeded`, False `ReconciliationFailed`,
`DependencyNotReady`, `HealthCheckFailed`, `ArtifactFailed`, `BuildFailed`; Unknown
`Progressing`), `Reconciling` while a sync runs, `Stalled` when only a change of the
object or its revision can help, `Healthy` when it waits for health, `lastAppliedRevision`
and `lastAttemptedRevision` as `<branch>@sha1:<sha>`, `observedGeneration` and
`inventory.entries` (`<namespace>_<name>_<group>_<kind>`, `v`). Fields gitkrm does not
honour are a condition of their own (`NotHonoured`): Flux's status schema keeps
conditions, so it survives Flux's own CRDs. GitRepository: `Ready` and `artifact`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from gitkrm.health import Health
from gitkrm.krm import ObjectRef
from gitkrm.krm.conditions import conditions_of
from gitkrm.source import GitRef, RefKind

from ..conditions import Conditions, clip
from ..status import Reason
from .model import ChildState, Phase, Unhonoured

READY: Final = "Ready"
RECONCILING: Final = "Reconciling"
STALLED: Final = "Stalled"
NOT_FOUND: Final = "not found"  # how the interpreters end a missing reference
HEALTHY: Final = "Healthy"
NOT_HONOURED: Final = "NotHonoured"

SUCCEEDED: Final = "ReconciliationSucceeded"
FAILED: Final = "ReconciliationFailed"
PROGRESSING: Final = "Progressing"
DEPENDENCY_NOT_READY: Final = "DependencyNotReady"
HEALTH_CHECK_FAILED: Final = "HealthCheckFailed"
ARTIFACT_FAILED: Final = "ArtifactFailed"
BUILD_FAILED: Final = "BuildFailed"


def flux_revision(sha: str | None, ref: GitRef | None, *, resolved: str | None = None) -> str:
    """Flux's revision form: `main@sha1:<sha>`, `v1.0@sha1:<sha>`, `sha1:<sha>`; for a
    semver range the tag it `resolved` to (`v1.2.0@sha1:<sha>`, as source-controller)."""
    if not sha:
        return ""
    if "@" in sha or ":" in sha:
        return sha  # already Flux's form (an ExternalArtifact's `latest@sha256:<digest>`)
    algo = "sha256" if len(sha) == 64 else "sha1"
    name = None if ref is None or ref.kind is RefKind.COMMIT else ref.name
    if ref is not None and ref.kind is RefKind.SEMVER:
        name = resolved
    return f"{name}@{algo}:{sha}" if name else f"{algo}:{sha}"


def inventory_id(ref: ObjectRef) -> str:
    """Flux's (and cli-utils') object id."""
    return f"{ref.namespace or ''}_{ref.name}_{ref.group}_{ref.kind}"


def _version(ref: ObjectRef) -> str:
    """The ref's version, or the preferred one of a built-in kind (custom kinds: "")."""
    if ref.version:
        return ref.version
    from gitkrm.sync.parse import builtin_registry

    found = builtin_registry().versions_of(ref.group_kind)
    return found[0].version if found else ""


def inventory(refs: Sequence[ObjectRef]) -> dict[str, Any]:
    """Flux's `status.inventory`: entries sorted by id."""
    entries = [{"id": inventory_id(r), "v": _version(r)} for r in refs]
    return {"entries": sorted(entries, key=lambda e: e["id"])}


def _names(refs: Sequence[ObjectRef]) -> str:
    return ", ".join(f"'{r.namespace}/{r.name}'" if r.namespace else f"'{r.name}'" for r in refs)


def unhonoured_message(items: Sequence[Unhonoured]) -> str:
    return clip("; ".join(f"{u.field}: {u.reason}" for u in items))


def _failure_reason(state: ChildState) -> tuple[str, bool]:
    """Flux's reason of a failed child, and whether it is stalled."""
    outcome = state.outcome
    if outcome is None:  # the object itself can't be read
        error = state.error or ""
        reason = ARTIFACT_FAILED if "spec.sourceRef" in error else FAILED
        # A missing GitRepository or Secret may yet be applied; anything else stays wrong
        # until the object changes (a field gitkrm can't honour, an invalid value).
        return reason, not error.endswith(NOT_FOUND)
    if outcome.reason is Reason.SOURCE_FAILED:
        return ARTIFACT_FAILED, False
    if outcome.reason is Reason.INVALID_REVISION or outcome.stalled:
        return BUILD_FAILED, True
    return FAILED, False


def kustomization_status(obj: Mapping[str, Any], state: ChildState) -> dict[str, Any]:
    """The whole `status` of a Kustomization from its child's state."""
    old: Mapping[str, Any] = obj.get("status") or {}
    if state.phase is Phase.SUSPENDED:
        return dict(old)  # Flux leaves a suspended object's status as it was
    md = obj.get("metadata") or {}
    generation = state.observed_generation
    if generation is None:
        generation = md.get("generation")
    conds = Conditions(conditions_of(obj), generation=generation)
    ref = state.spec.config.ref if state.spec is not None else None
    outcome = state.outcome
    attempted = flux_revision(
        outcome.revision if outcome else None, ref, resolved=state.resolved_ref
    )
    applied = str(old.get("lastAppliedRevision") or "")
    error = state.error or (("; ".join(outcome.errors)) if outcome and outcome.errors else "")
    phase = state.phase
    if phase is Phase.PENDING:
        waiting = _names(state.waiting_for)
        conds.set(
            READY,
            "False",
            DEPENDENCY_NOT_READY,
            f"Dependencies do not meet ready condition: {waiting}",
        )
        conds.drop(RECONCILING, STALLED)
    elif phase is Phase.SYNCING:
        conds.set(RECONCILING, "True", PROGRESSING, "Reconciliation in progress")
        conds.set(READY, "Unknown", PROGRESSING, "Reconciliation in progress")
        conds.drop(STALLED)
    elif phase is Phase.DELETING:
        conds.set(RECONCILING, "True", PROGRESSING, "Deleting: pruning the objects it applied")
        conds.set(READY, "Unknown", PROGRESSING, "Deleting: pruning the objects it applied")
    elif phase is Phase.FAILED or (outcome is not None and not outcome.succeeded):
        reason, stalled = _failure_reason(state)
        conds.set(READY, "False", reason, error or "Reconciliation failed")
        conds.drop(RECONCILING)
        if stalled:
            conds.set(STALLED, "True", reason, error or "Reconciliation failed")
        else:
            conds.drop(STALLED)
    else:  # SYNCED
        applied = attempted or applied
        spec = state.spec
        waits = spec is None or spec.wait or bool(spec.health_checks)
        health = state.health if waits else None  # Flux checks health only when asked
        conds.drop(STALLED)
        if health is None or health is Health.CURRENT:
            if health is not None:
                conds.set(HEALTHY, "True", "Succeeded", "Health check passed")
            conds.set(READY, "True", SUCCEEDED, f"Applied revision: {applied}")
            conds.drop(RECONCILING)
        elif health is Health.FAILED:
            msg = f"Health check failed for revision {applied}: {state.health_message}".rstrip(": ")
            conds.set(HEALTHY, "False", HEALTH_CHECK_FAILED, msg)
            conds.set(READY, "False", HEALTH_CHECK_FAILED, msg)
            conds.drop(RECONCILING)
        else:
            msg = f"Running health checks for revision {applied}"
            conds.set(HEALTHY, "Unknown", PROGRESSING, msg)
            conds.set(RECONCILING, "True", PROGRESSING, msg)
            conds.set(READY, "Unknown", PROGRESSING, msg)
    unhonoured = state.unhonoured or (state.spec.unhonoured if state.spec else ())
    if unhonoured:
        conds.set(NOT_HONOURED, "True", "FieldsNotHonoured", unhonoured_message(unhonoured))
    else:
        conds.drop(NOT_HONOURED)
    out: dict[str, Any] = {"conditions": conds.items}
    if generation is not None:
        out["observedGeneration"] = generation
    if applied:
        out["lastAppliedRevision"] = applied
    if attempted or old.get("lastAttemptedRevision"):
        out["lastAttemptedRevision"] = attempted or old["lastAttemptedRevision"]
    if state.inventory or phase is Phase.SYNCED:
        out["inventory"] = inventory(state.inventory)
    elif old.get("inventory"):
        out["inventory"] = old["inventory"]
    return out


def source_status(
    obj: Mapping[str, Any],
    *,
    error: str | None,
    failed: str,
    artifact: Mapping[str, str] | None,
    stored: str,
    pending: str | None = None,
) -> dict[str, Any]:
    """A Flux source object's `status` as source-controller writes it: Ready False with
    `error` (reason `failed`; the artifact stored before kept), True with `artifact`
    (`stored` the message; lastUpdateTime kept while its revision is the same), else
    Unknown with `pending` (nothing when None)."""
    old: Mapping[str, Any] = obj.get("status") or {}
    generation = (obj.get("metadata") or {}).get("generation")
    conds = Conditions(
        conditions_of(obj), generation=generation if isinstance(generation, int) else None
    )
    out: dict[str, Any] = {}
    if error:
        conds.set(READY, "False", failed, error)
        if old.get("artifact"):
            out["artifact"] = old["artifact"]
    elif artifact is not None:
        conds.set(READY, "True", "Succeeded", stored)
        prior = old.get("artifact") or {}
        out["artifact"] = {
            **artifact,
            "lastUpdateTime": prior.get("lastUpdateTime")
            if prior.get("revision") == artifact["revision"]
            else conds.now,
        }
    elif pending is not None:
        conds.set(READY, "Unknown", PROGRESSING, pending)
    conds.drop(RECONCILING, STALLED)
    out["conditions"] = conds.items
    if isinstance(generation, int):
        out["observedGeneration"] = generation
    return out


def git_repository_status(
    obj: Mapping[str, Any],
    *,
    sha: str | None,
    ref: GitRef | None,
    error: str | None = None,
    resolved: str | None = None,
) -> dict[str, Any]:
    """A GitRepository's `status`: Ready with the artifact of the revision fetched, or False
    with the fetch's error (Flux's `GitOperationFailed`)."""
    md = obj.get("metadata") or {}
    name, ns = md.get("name") or "", md.get("namespace") or ""
    revision = flux_revision(sha, ref, resolved=resolved)
    artifact = {
        "path": f"gitrepository/{ns}/{name}/{sha}.tar.gz",
        "url": f"gitkrm://{ns}/{name}/{sha}",
        "revision": revision,
    }
    return source_status(
        obj,
        error=error,
        failed="GitOperationFailed",
        artifact=artifact if sha else None,
        stored=f"stored artifact for revision '{revision}'",
        pending="building artifact",
    )
