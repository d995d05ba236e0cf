"""The CRDs of Flux's Kustomization and GitRepository that gitkrm registers under
`--interpret flux` when the repository does not carry Flux's own (a bootstrapped
repository does, in `flux-system/gotk-components.yaml`, and those are accepted as they are).

Both served versions (v1, the storage version, and v1beta2), the status subresource and
Flux's printer columns, so `kubectl get kustomizations,gitrepositories` reads as with
Flux's controllers. The schemas type the fields gitkrm reads and keep the rest
(`x-kubernetes-preserve-unknown-fields`): Flux's full schemas are large, and what gitkrm
does not honour is reported on the status rather than refused at admission.
"""

from __future__ import annotations

from typing import Any, Final

from gitkrm.krm import Obj

from .flux_spec import GIT_REPOSITORY, KUSTOMIZATION
from .peercrd import STR, peer_crd

_BOOL: Final = {"type": "boolean"}
_READY_STATUS: Final = '.status.conditions[?(@.type=="Ready")].status'
_READY_MESSAGE: Final = '.status.conditions[?(@.type=="Ready")].message'
_NAMED: Final = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": STR, "namespace": STR},
}


def _columns(*, url: bool) -> list[dict[str, Any]]:
    cols: list[dict[str, Any]] = (
        [{"name": "URL", "type": "string", "jsonPath": ".spec.url"}] if url else []
    )
    return [
        *cols,
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Ready", "type": "string", "jsonPath": _READY_STATUS},
        {"name": "Status", "type": "string", "jsonPath": _READY_MESSAGE},
    ]


def crd_object(
    *,
    group: str,
    kind: str,
    plural: str,
    short: list[str],
    spec: dict[str, Any],
    url: bool = False,
    versions: tuple[str, ...] = ("v1", "v1beta2"),
) -> Obj:
    """A Flux CRD: `versions` served (the first stored), the status subresource, and
    Flux's printer columns (Age, Ready, Status; URL first when `url`)."""
    return peer_crd(
        peer="flux",
        group=group,
        kind=kind,
        plural=plural,
        short=short,
        spec=spec,
        versions=versions,
        columns=_columns(url=url),
        status_subresource=True,
    )


def kustomization_crd() -> Obj:
    spec = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "required": ["interval", "prune", "sourceRef"],
        "properties": {
            "path": STR,
            "interval": STR,
            "retryInterval": STR,
            "timeout": STR,
            "prune": _BOOL,
            "suspend": _BOOL,
            "wait": _BOOL,
            "force": _BOOL,
            "targetNamespace": {"type": "string", "maxLength": 63},
            "namePrefix": STR,
            "nameSuffix": STR,
            "serviceAccountName": STR,
            "sourceRef": {
                "type": "object",
                "required": ["kind", "name"],
                "properties": {
                    "apiVersion": STR,
                    "kind": {
                        "type": "string",
                        "enum": ["OCIRepository", "GitRepository", "Bucket", "ExternalArtifact"],
                    },
                    "name": STR,
                    "namespace": STR,
                },
            },
            "dependsOn": {"type": "array", "items": _NAMED},
            "components": {"type": "array", "items": STR},
        },
    }
    return crd_object(
        group=KUSTOMIZATION.group, kind=KUSTOMIZATION.kind, plural="kustomizations",
        short=["ks"], spec=spec, url=False,
    )  # fmt: skip


def git_repository_crd() -> Obj:
    spec = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "required": ["url"],
        "properties": {
            "url": {"type": "string", "pattern": "^(http|https|ssh)://.*$|^file://.*$|^/.*$"},
            "interval": STR,
            "timeout": STR,
            "suspend": _BOOL,
            "secretRef": {"type": "object", "required": ["name"], "properties": {"name": STR}},
            "ref": {
                "type": "object",
                "properties": {k: STR for k in ("branch", "tag", "semver", "name", "commit")},
            },
        },
    }
    return crd_object(
        group=GIT_REPOSITORY.group, kind=GIT_REPOSITORY.kind, plural="gitrepositories",
        short=["gitrepo"], spec=spec, url=True,
    )  # fmt: skip


def crds() -> list[Obj]:
    """Both CRDs (fresh objects: callers may change them)."""
    return [kustomization_crd(), git_repository_crd()]
