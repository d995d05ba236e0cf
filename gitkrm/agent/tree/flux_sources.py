"""The status of Flux's source objects (GitRepository, HelmRepository, OCIRepository).

In Flux, source-controller fetches each source and writes its `Ready` condition and
`artifact`. Under gitkrm the child that synced a Kustomization or HelmRelease is what
fetched it, so that child's state gives the source object its status: Ready True with the
artifact of the revision it fetched, or False with the fetch's error; nothing before its
first attempt. `kubectl get gitrepositories,helmrepositories,ocirepositories` then read
as with source-controller. Several children sharing a source write the same status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gitkrm.krm import GroupKind, Obj, ObjectRef

from ..status import Reason
from .flux_spec import GIT_REPOSITORY, OCI_REPOSITORY, SOURCE_GROUP
from .flux_status import git_repository_status, source_status
from .model import ChildState, SourceStatus

HELM_REPOSITORY: Final = GroupKind(group=SOURCE_GROUP, kind="HelmRepository")


def _fetched(state: ChildState) -> tuple[str | None, str | None] | None:
    """(revision fetched, fetch error) of the child's last attempt; None before one."""
    outcome = state.outcome
    if outcome is None:
        return None
    if outcome.reason is Reason.SOURCE_FAILED:
        return None, (outcome.errors[0] if outcome.errors else "the fetch failed")
    return outcome.revision, None


def _ref(kind: GroupKind, given: Mapping[str, Any], obj: Obj) -> ObjectRef | None:
    name = str(given.get("name") or "")
    if not name or str(given.get("kind") or kind.kind) != kind.kind:
        return None
    namespace = str(given.get("namespace") or (obj.get("metadata") or {}).get("namespace") or "")
    return ObjectRef(group=kind.group, kind=kind.kind, name=name, namespace=namespace or "default")


def repository_status(obj: Obj, *, revision: str | None, error: str | None) -> Obj:
    """A HelmRepository's or OCIRepository's `status`: Ready with the artifact the child
    fetched (`<version>@sha256:<digest>`), or False with the fetch's error."""
    md = obj.get("metadata") or {}
    url = f"gitkrm://{md.get('namespace') or ''}/{md.get('name') or ''}/{revision}"
    return source_status(
        obj,
        error=error,
        failed="FetchFailed",
        artifact=_artifact(revision, url) if revision else None,
        stored=f"stored artifact: revision '{revision}'",
    )


def _artifact(revision: str, url: str) -> dict[str, str]:
    """`revision` and `url`, and `digest` when the revision names one (`<tag>@sha256:...`:
    the manifest's, where source-controller writes its stored tarball's)."""
    out = {"revision": revision, "url": url}
    digest = revision.rpartition("@")[2]
    if digest.startswith("sha256:"):
        out["digest"] = digest
    return out


def kustomization_sources(obj: Obj, state: ChildState) -> tuple[SourceStatus, ...]:
    """The GitRepository or OCIRepository a Kustomization's `sourceRef` names."""
    fetched = _fetched(state)
    source_ref = (obj.get("spec") or {}).get("sourceRef") or {}
    oci = _ref(OCI_REPOSITORY, source_ref, obj)
    if fetched is not None and oci is not None:
        revision, failure = fetched

        def oci_status(live: Obj) -> Obj:
            return repository_status(live, revision=revision, error=failure)

        return (SourceStatus(ref=oci, status=oci_status),)
    ref = _ref(GIT_REPOSITORY, source_ref, obj)
    if fetched is None or ref is None:
        return ()
    sha, error = fetched
    git_ref = state.spec.config.ref if state.spec is not None else None

    def status(live: Obj) -> Obj:
        return git_repository_status(
            live, sha=sha, ref=git_ref, error=error, resolved=state.resolved_ref
        )

    return (SourceStatus(ref=ref, status=status),)


def helmrelease_sources(obj: Obj, state: ChildState) -> tuple[SourceStatus, ...]:
    """The HelmRepository (`chart.spec.sourceRef`) or OCIRepository (`chartRef`) of a
    HelmRelease; a chart in a GitRepository leaves that to the Kustomizations over it."""
    fetched = _fetched(state)
    spec: Mapping[str, Any] = obj.get("spec") or {}
    chart_ref = spec.get("chartRef") or {}
    template = ((spec.get("chart") or {}).get("spec") or {}).get("sourceRef") or {}
    if chart_ref:
        ref = _ref(OCI_REPOSITORY, chart_ref, obj)
    else:
        ref = _ref(HELM_REPOSITORY, template, obj)
    if fetched is None or ref is None:
        return ()
    revision, error = fetched

    def status(live: Obj) -> Obj:
        return repository_status(live, revision=revision, error=error)

    return (SourceStatus(ref=ref, status=status),)
