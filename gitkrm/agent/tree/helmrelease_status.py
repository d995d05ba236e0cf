"""A Flux HelmRelease's status in helm-controller's form, so `kubectl get helmreleases`
reads Ready and its message as with Flux.

- `Ready` and `Released`: True `InstallSucceeded` / `UpgradeSucceeded` ("Helm install
  succeeded for release ns/name.v1 with chart podinfo@6.5.0"), False `InstallFailed` /
  `UpgradeFailed` (the sync's first error), `DependencyNotReady`, `SourceNotReady` (the
  chart could not be fetched: `OCIRepository 'ns/name' is not ready: <error>`, no
  release in the history), `ArtifactFailed` (the spec could not be read), Unknown
  `Progressing` while the release's objects are not healthy yet; `Stalled` with an
  invalid spec; `NotHonoured` lists the fields gitkrm does not honour (also logged).
- `lastAttemptedRevision` (the chart version, or the commit of a Git chart),
  `observedGeneration`, `helmChart` (`<namespace>/<namespace>-<name>`, as Flux names it),
  `history`: the last releases, newest first (`chartName`, `chartVersion`, `digest`,
  `name`, `namespace`, `version` counting the releases, `status` deployed / failed /
  superseded, `firstDeployed`, `lastDeployed`), at most `MAX_HISTORY`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from gitkrm.krm import Obj
from gitkrm.krm.clock import now_rfc3339
from gitkrm.krm.conditions import Condition, conditions_of, remove_condition, set_condition

from ..conditions import clip
from ..status import Reason
from .flux_status import unhonoured_message
from .model import ChildState, Phase
from .naming import describe

MAX_HISTORY: Final = 5
READY: Final = "Ready"
RELEASED: Final = "Released"
STALLED: Final = "Stalled"
NOT_HONOURED: Final = "NotHonoured"


def split_revision(revision: str | None) -> tuple[str, str]:
    """(version, digest) of a chart source's `<version>@sha256:<hex>`; a commit sha
    (a chart in Git) is the version and the digest."""
    if not revision:
        return "", ""
    version, at, digest = revision.partition("@")
    return (version, digest) if at else (revision, revision)


def _attempted(
    revision: str,
    releases: Sequence[Mapping[str, str]],
    history: list[dict[str, Any]],
    chart: str,
) -> tuple[str, str, str]:
    """(chart, version, digest) of an attempt: the chart's own name and version as rendered;
    the archive's digest of a chart repository's revision (`<version>@sha256:...`), the
    chart files' digest of a chart in Git; a pass that rendered nothing (nothing changed)
    is the newest release again."""
    rendered = releases[0] if releases else None
    if rendered is not None:
        version = str(rendered.get("version") or "")
        at_version, at, at_digest = revision.partition("@")
        digest = at_digest if at else str(rendered.get("digest") or "")
        return str(rendered.get("chart") or chart), version or at_version, digest
    if "@" in revision or not history:
        version, digest = split_revision(revision)
        return chart, version, digest
    newest = history[0]
    return (
        str(newest.get("chartName") or chart),
        str(newest.get("chartVersion") or ""),
        str(newest.get("digest") or ""),
    )


def _history(
    previous: list[dict[str, Any]],
    *,
    chart: str,
    version: str,
    digest: str,
    name: str,
    namespace: str,
    succeeded: bool,
    now: str,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The history with this attempt: the same chart version and digest updates the newest
    entry, another one is a new release on top."""
    status = "deployed" if succeeded else "failed"
    newest = previous[0] if previous else None
    if newest is not None and (newest.get("chartVersion"), newest.get("digest")) == (
        version,
        digest,
    ):
        entry = {**newest, "status": status if newest.get("status") != "deployed" else "deployed"}
        if succeeded and newest.get("status") != "deployed":
            entry["lastDeployed"] = now
        return [entry, *previous[1:]], entry
    entry = {
        "chartName": chart,
        "chartVersion": version,
        "digest": digest,
        "name": name,
        "namespace": namespace,
        "version": int(newest.get("version") or 0) + 1 if newest is not None else 1,
        "status": status,
        "firstDeployed": now,
        "lastDeployed": now,
    }
    rest = [{**h, "status": "superseded"} if h.get("status") == "deployed" else h for h in previous]
    return [entry, *rest][:MAX_HISTORY], entry


def _chart_source(obj: Obj) -> str:
    """What helm-controller names when the chart can't be had: the `chartRef` source, or
    the HelmChart it makes of `chart.spec` (`<namespace>/<namespace>-<name>`)."""
    spec = obj.get("spec") or {}
    md = obj.get("metadata") or {}
    namespace = str(md.get("namespace") or "default")
    ref = spec.get("chartRef") or {}
    if ref.get("name"):
        kind = ref.get("kind") or "OCIRepository"
        return f"{kind} '{ref.get('namespace') or namespace}/{ref['name']}'"
    return f"HelmChart '{namespace}/{namespace}-{md.get('name')}'"


def release_status(
    previous: Mapping[str, Any],
    state: ChildState,
    *,
    obj: Obj,
    chart: str,
    release: str,
    namespace: str,
) -> dict[str, Any]:
    """The whole `status` of a HelmRelease (see the module docstring)."""
    status: dict[str, Any] = copy.deepcopy(dict(previous))
    conditions: list[Condition] = list(conditions_of({"status": status}))
    md = obj.get("metadata") or {}
    generation = int(md.get("generation") or 1)
    now = now_rfc3339()
    outcome = state.outcome
    history: list[dict[str, Any]] = list(status.get("history") or [])
    ready: tuple[str, str, str]
    released: tuple[str, str, str] | None = None
    if state.error:
        ready = (
            "False",
            "ArtifactFailed" if state.spec is not None else "InvalidSpec",
            state.error,
        )
    elif state.phase is Phase.PENDING:
        waiting = ", ".join(describe(r) for r in state.waiting_for) or "its dependencies"
        ready = (
            "False",
            "DependencyNotReady",
            f"dependencies do not meet ready condition: {waiting}",
        )
    elif state.phase is Phase.SUSPENDED:
        ready = ("False", "Suspended", "reconciliation is suspended")
    elif state.phase is Phase.DELETING:
        ready = ("False", "Deleting", "the release is being uninstalled")
    elif outcome is None:
        ready = ("Unknown", "Progressing", "reconciliation in progress")
    elif not outcome.succeeded and outcome.reason is Reason.SOURCE_FAILED:
        # helm-controller's: no chart, so no release attempted (nothing in the history)
        first = outcome.errors[0] if outcome.errors else "the fetch failed"
        ready = ("False", "SourceNotReady", clip(f"{_chart_source(obj)} is not ready: {first}"))
    else:
        chart, version, digest = _attempted(
            outcome.revision or "", outcome.releases, history, chart
        )
        if version:
            status["lastAttemptedRevision"] = version
        history, entry = _history(
            history,
            chart=chart,
            version=version,
            digest=digest,
            name=release,
            namespace=namespace,
            succeeded=outcome.succeeded,
            now=now,
        )
        action = "install" if entry["version"] == 1 else "upgrade"
        label = f"{namespace}/{release}.v{entry['version']}"
        with_chart = f"with chart {chart}@{entry['chartVersion']}"
        if not outcome.succeeded:
            first = outcome.errors[0] if outcome.errors else "sync failed"
            reason = "InstallFailed" if action == "install" else "UpgradeFailed"
            ready = (
                "False",
                reason,
                clip(f"Helm {action} failed for release {label} {with_chart}: {first}"),
            )
            released = ready
        else:
            reason = "InstallSucceeded" if action == "install" else "UpgradeSucceeded"
            message = f"Helm {action} succeeded for release {label} {with_chart}"
            released = ("True", reason, message)
            if state.phase is Phase.SYNCING:
                ready = (
                    "Unknown",
                    "Progressing",
                    state.health_message or "waiting for the release's objects to be ready",
                )
            else:
                ready = ("True", reason, message)
    extra: Condition = {"observedGeneration": generation}
    conditions = set_condition(conditions, READY, *ready, now=now, extra=extra)
    if released is not None:
        conditions = set_condition(conditions, RELEASED, *released, now=now, extra=extra)
    if state.error and state.spec is None:
        conditions = set_condition(
            conditions, STALLED, "True", "InvalidSpec", state.error, now=now, extra=extra
        )
    else:
        conditions = remove_condition(conditions, STALLED)
    if state.unhonoured:
        text = unhonoured_message(state.unhonoured)
        conditions = set_condition(
            conditions, NOT_HONOURED, "True", "FieldsNotHonoured", text, now=now, extra=extra
        )
    else:
        conditions = remove_condition(conditions, NOT_HONOURED)
    status["conditions"] = conditions
    if history:
        status["history"] = history
    obj_ns = md.get("namespace") or "default"
    status["helmChart"] = f"{obj_ns}/{obj_ns}-{md.get('name')}"
    status["observedGeneration"] = (
        state.observed_generation if state.observed_generation is not None else generation
    )
    return status
