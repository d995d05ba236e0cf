"""Flux's `ArtifactGenerator` as a declaring object (`--interpret flux`).

Its child source reads the generator's repository and syncs one `ExternalArtifact` per
artifact (`flux_generated`), pruning those no longer listed; the statuses are
source-watcher's: the generator `Ready` (`Succeeded`, "reconciliation succeeded,
generated N artifact(s)"; False `BuildFailed` with the error) with `inventory` entries
(name, namespace, digest, filename), and each ExternalArtifact `Ready` with
`status.artifact` (revision `latest@sha256:<digest>`, digest, size, and
`metadata["org.opencontainers.image.revision"]` when `originRevision` asks for it).
Kustomizations over these artifacts sync them themselves (`flux_artifacts`); the objects
are what `kubectl get externalartifacts` and other tools read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from gitkrm.krm import Obj
from gitkrm.krm.conditions import conditions_of
from gitkrm.source import RefKind

from ..conditions import Conditions
from ..config import SourceConfig
from ..status import Reason
from .fields import FieldErrors
from .flux_artifacts import inventory_entries, read_generator
from .flux_generated import DIGEST, ORIGIN, ORIGIN_METADATA, REVISION, SIZE, GeneratedArtifacts
from .flux_spec import ARTIFACT_GENERATOR, EXTERNAL_ARTIFACT, FINALIZER
from .flux_status import READY, RECONCILING, STALLED
from .model import ChildSpec, ChildState, Context, Peer, Phase, SourceStatus
from .naming import child_name

SUSPEND: Final = "source.extensions.fluxcd.io/reconcile"
DEFAULT_INTERVAL: Final = 600.0


class GeneratorInterpreter:
    """source-watcher's ArtifactGenerator (the tree's registry uses `INTERPRETER`)."""

    peer: Peer | None = Peer.FLUX
    kinds = frozenset({ARTIFACT_GENERATOR})

    async def child(self, obj: Obj, ctx: Context) -> ChildSpec:
        parent = ctx.parent
        fail = FieldErrors(obj, parent)
        gen = await read_generator(obj, parent=parent, ctx=ctx, fail=fail)
        md = obj.get("metadata") or {}
        repo = gen.repository
        ref_name = (
            repo.ref.name if repo.ref is not None and repo.ref.kind is not RefKind.COMMIT else ""
        )
        spec = GeneratedArtifacts(
            namespace=gen.ref.namespace or "default",
            name=gen.ref.name,
            uid=str(md.get("uid") or ""),
            recipes=gen.recipes,
            origin=tuple(n for n, wanted in gen.origin.items() if wanted),
            ref_name=ref_name,
            labels=gen.labels,
            annotations=gen.annotations,
        )
        suspended = str((md.get("annotations") or {}).get(SUSPEND, "")).lower() == "disabled"
        config = SourceConfig(
            name=child_name(gen.ref),
            url=repo.url,
            ref=repo.ref,
            interval=repo.interval if repo.interval and not repo.is_parent else parent.interval,
            timeout=repo.timeout,
            prune=True,
            adoption=parent.adoption,
            suspend=suspended or repo.suspend,
            auth=repo.auth,
            ca_file=repo.ca_file,
            verify=parent.verify if repo.is_parent else None,
            generator=spec,
        )
        return ChildSpec(
            declared_by=gen.ref, config=config, finalizer=FINALIZER, unhonoured=gen.unhonoured
        )

    def status(self, obj: Obj, state: ChildState) -> Obj:
        return generator_status(obj, state)

    def source_statuses(self, obj: Obj, state: ChildState) -> Sequence[SourceStatus]:
        if state.outcome is None or not state.outcome.succeeded:
            return ()
        return tuple(
            SourceStatus(ref=r, status=external_artifact_status)
            for r in state.inventory
            if (r.group, r.kind) == (EXTERNAL_ARTIFACT.group, EXTERNAL_ARTIFACT.kind)
        )

    def crds(self) -> Sequence[Obj]:
        return ()  # the flux interpreter's (flux_crds) include the generator's


def generator_status(obj: Obj, state: ChildState) -> dict[str, Any]:
    """source-watcher's status of an ArtifactGenerator."""
    old: Mapping[str, Any] = obj.get("status") or {}
    if state.phase is Phase.SUSPENDED:
        return dict(old)
    generation = state.observed_generation
    conds = Conditions(conditions_of(obj), generation=generation)
    out: dict[str, Any] = {}
    outcome = state.outcome
    error = state.error or ("; ".join(outcome.errors) if outcome and outcome.errors else "")
    if state.phase is Phase.FAILED or (state.error and outcome is None):
        stalled = outcome is None or outcome.reason is Reason.INVALID_REVISION
        reason = (
            "SourceFetchFailed"
            if outcome and outcome.reason is Reason.SOURCE_FAILED
            else ("BuildFailed")
        )
        conds.set(READY, "False", reason, error or "reconciliation failed")
        if stalled and outcome is None:
            conds.set(STALLED, "True", "ValidationFailed", error)
        if old.get("inventory"):
            out["inventory"] = old["inventory"]
    elif state.phase is Phase.SYNCED and outcome is not None:
        entries = inventory_entries(state.inventory, state.details)
        conds.set(
            READY,
            "True",
            "Succeeded",
            f"reconciliation succeeded, generated {len(entries)} artifact(s)",
        )
        conds.drop(RECONCILING, STALLED)
        out["inventory"] = entries
    else:
        conds.set(READY, "Unknown", "Progressing", "building artifacts")
        conds.set(RECONCILING, "True", "Progressing", "building artifacts")
        if old.get("inventory"):
            out["inventory"] = old["inventory"]
    if state.phase is not Phase.SYNCING:
        conds.drop(RECONCILING)
    out["conditions"] = conds.items
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def external_artifact_status(live: Obj) -> dict[str, Any]:
    """source-watcher's status of an ExternalArtifact, from what its generator's child
    applied (the `gitkrm.io/artifact-*` annotations)."""
    md = live.get("metadata") or {}
    notes: Mapping[str, str] = md.get("annotations") or {}
    old: Mapping[str, Any] = live.get("status") or {}
    revision, digest = notes.get(REVISION), notes.get(DIGEST)
    if not revision or not digest:
        return dict(old)
    generation = md.get("generation")
    conds = Conditions(
        conditions_of(live), generation=generation if isinstance(generation, int) else None
    )
    conds.set(READY, "True", "Succeeded", "Artifact is ready")
    name, ns = str(md.get("name") or ""), str(md.get("namespace") or "")
    hexes = digest.partition(":")[2]
    prior = old.get("artifact") or {}
    artifact: dict[str, Any] = {
        "digest": digest,
        "lastUpdateTime": prior.get("lastUpdateTime")
        if prior.get("digest") == digest
        else conds.now,
        "path": f"externalartifact/{ns}/{name}/{hexes[:16]}.tar.gz",
        "revision": revision,
        "size": int(notes.get(SIZE) or 0),
        "url": f"gitkrm://externalartifact/{ns}/{name}/{hexes[:16]}",
    }
    if notes.get(ORIGIN):
        artifact["metadata"] = {ORIGIN_METADATA: notes[ORIGIN]}
    return {"artifact": artifact, "conditions": conds.items}


INTERPRETER: Final = GeneratorInterpreter()
