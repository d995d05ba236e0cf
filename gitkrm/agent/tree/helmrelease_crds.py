"""The CRDs of Flux's HelmRelease, HelmRepository and OCIRepository that gitkrm registers
under `--interpret flux` when the repository does not carry Flux's own: the served
versions (HelmRelease v2, stored, and v2beta2; the sources v1, stored, and v1beta2), the
status subresource and helm-controller's and source-controller's printer columns, so
`kubectl get helmreleases` reads Age, Ready and Status as with Flux. The schemas type the
fields gitkrm reads and keep the rest: what gitkrm does not honour is reported on the
status, not refused at admission.
"""

from __future__ import annotations

from typing import Any, Final

from gitkrm.krm import Obj

from .flux_crds import crd_object
from .peercrd import ANY, STR

_BOOL: Final = {"type": "boolean"}
_NAMED: Final = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": STR, "namespace": STR},
}
_VALUES_FROM: Final = {
    "type": "object",
    "required": ["kind", "name"],
    "properties": {
        "kind": {"type": "string", "enum": ["ConfigMap", "Secret"]},
        "name": STR,
        "valuesKey": STR,
        "targetPath": STR,
        "optional": _BOOL,
    },
}


def helm_release_crd() -> Obj:
    spec = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "interval": STR,
            "chart": ANY,
            "chartRef": {
                "type": "object",
                "required": ["kind", "name"],
                "properties": {"kind": STR, "name": STR, "namespace": STR},
            },
            "releaseName": {"type": "string", "maxLength": 53},
            "targetNamespace": {"type": "string", "maxLength": 63},
            "storageNamespace": {"type": "string", "maxLength": 63},
            "suspend": _BOOL,
            "values": ANY,
            "valuesFrom": {"type": "array", "items": _VALUES_FROM},
            "dependsOn": {"type": "array", "items": _NAMED},
        },
    }
    return crd_object(
        group="helm.toolkit.fluxcd.io", kind="HelmRelease", plural="helmreleases", short=["hr"],
        spec=spec, versions=("v2", "v2beta2"),
    )  # fmt: skip


def _source_spec(**extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "required": ["url"],
        "properties": {
            "url": STR,
            "interval": STR,
            "timeout": STR,
            "suspend": _BOOL,
            "secretRef": _NAMED,
            "certSecretRef": _NAMED,
            **extra,
        },
    }


def helm_repository_crd() -> Obj:
    spec = _source_spec(type={"type": "string", "enum": ["default", "oci"]})
    return crd_object(
        group="source.toolkit.fluxcd.io", kind="HelmRepository", plural="helmrepositories",
        short=["helmrepo"], spec=spec, url=True,
    )  # fmt: skip


def oci_repository_crd() -> Obj:
    ref = {
        "type": "object",
        "properties": {k: STR for k in ("tag", "semver", "semverFilter", "digest")},
    }
    return crd_object(
        group="source.toolkit.fluxcd.io", kind="OCIRepository", plural="ocirepositories",
        short=["ocirepo"], spec=_source_spec(ref=ref), url=True,
    )  # fmt: skip


def crds() -> list[Obj]:
    """The three CRDs (fresh objects: callers may change them)."""
    return [helm_release_crd(), helm_repository_crd(), oci_repository_crd()]
