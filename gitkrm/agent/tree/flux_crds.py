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

from .flux_spec import ARTIFACT_GENERATOR, EXTERNAL_ARTIFACT, GIT_REPOSITORY, KUSTOMIZATION
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


_ALIAS: Final = "[a-z0-9]([a-z0-9_-]*[a-z0-9])?"


def _text(pattern: str | None = None, *, max_length: int = 1024) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": max_length}
    if pattern:
        out["pattern"] = pattern
    return out


def artifact_generator_crd() -> Obj:
    """source-watcher's ArtifactGenerator (v1beta1), with its validations: errors in Git
    are refused at admission, naming file, line and object."""
    copy_op = {
        "type": "object",
        "required": ["from", "to"],
        "properties": {
            "from": _text(f"^@({_ALIAS})/(.*)$"),
            "to": _text("^@(artifact)/(.*)$"),
            "exclude": {"type": "array", "maxItems": 100, "items": STR},
            "strategy": {"type": "string", "enum": ["Overwrite", "Merge", "Extract"]},
        },
    }
    spec = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "required": ["sources", "artifacts"],
        "properties": {
            "sources": {
                "type": "array",
                "minItems": 1,
                "maxItems": 1000,
                "items": {
                    "type": "object",
                    "required": ["alias", "kind", "name"],
                    "properties": {
                        "alias": _text(f"^{_ALIAS}$", max_length=63),
                        "kind": {
                            "type": "string",
                            "enum": [
                                "Bucket",
                                "GitRepository",
                                "OCIRepository",
                                "HelmChart",
                                "ExternalArtifact",
                            ],
                        },
                        "name": _text(max_length=253),
                        "namespace": _text("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63),
                    },
                },
            },
            "pathPattern": _text(f"^@({_ALIAS})/(.*)$"),
            "artifacts": {
                "type": "array",
                "minItems": 1,
                "maxItems": 1000,
                "items": {
                    "type": "object",
                    "required": ["name", "copy"],
                    "properties": {
                        "name": _text(max_length=253),
                        "revision": _text(f"^@({_ALIAS})$", max_length=64),
                        "originRevision": _text(f"^@({_ALIAS})$", max_length=64),
                        "copy": {"type": "array", "minItems": 1, "items": copy_op},
                    },
                },
            },
        },
    }
    return crd_object(
        group=ARTIFACT_GENERATOR.group, kind=ARTIFACT_GENERATOR.kind,
        plural="artifactgenerators", short=["ag"], spec=spec, versions=("v1beta1",),
    )  # fmt: skip


def external_artifact_crd() -> Obj:
    """source-controller's ExternalArtifact (v1): `spec.sourceRef` names its producer."""
    spec = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "sourceRef": {
                "type": "object",
                "required": ["kind", "name"],
                "properties": {"apiVersion": STR, "kind": STR, "name": STR, "namespace": STR},
            }
        },
    }
    return crd_object(
        group=EXTERNAL_ARTIFACT.group, kind=EXTERNAL_ARTIFACT.kind,
        plural="externalartifacts", short=[], spec=spec, versions=("v1",),
    )  # fmt: skip


def crds() -> list[Obj]:
    """The CRDs (fresh objects: callers may change them)."""
    return [
        kustomization_crd(),
        git_repository_crd(),
        artifact_generator_crd(),
        external_artifact_crd(),
    ]
