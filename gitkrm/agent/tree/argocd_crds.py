"""The CRDs of Argo CD's Application, AppProject and ApplicationSet that gitkrm registers
under `--interpret argocd` when the repository does not carry Argo CD's own (a repository
holding Argo CD's install manifest has them, and those are accepted as they are).

As Argo CD's: `argoproj.io/v1alpha1`, namespaced, short names `app`/`apps`,
`appproj`/`appprojs` and `appset`/`appsets`, and NO status subresource (an Application's
status is part of the object, written with the object). The Application's printer
columns are Argo CD's: Sync Status, Health Status, and with `-o wide` Revision and
Project. The schemas type the fields gitkrm reads and keep the rest
(`x-kubernetes-preserve-unknown-fields`): what gitkrm does not honour is reported on the
status rather than refused at admission.
"""

from __future__ import annotations

from typing import Any, Final

from gitkrm.krm import Obj

from .argocd_spec import GROUP, VERSION
from .peercrd import ANY, STR, peer_crd

_SOURCE: Final = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
    "required": ["repoURL"],
    "properties": {"repoURL": STR, "targetRevision": STR, "path": STR, "chart": STR},
}
_APP_COLUMNS: Final = [
    {"name": "Sync Status", "type": "string", "jsonPath": ".status.sync.status"},
    {"name": "Health Status", "type": "string", "jsonPath": ".status.health.status"},
    {"name": "Revision", "type": "string", "jsonPath": ".status.sync.revision", "priority": 10},
    {"name": "Project", "type": "string", "jsonPath": ".spec.project", "priority": 10},
]


def _crd(
    *, kind: str, plural: str, short: list[str], spec: dict[str, Any], columns: list[Any]
) -> Obj:
    """Argo CD's: one version, no status subresource (status and `operation` are written
    with the object)."""
    return peer_crd(
        peer="argocd",
        group=GROUP,
        kind=kind,
        plural=plural,
        short=short,
        spec=spec,
        versions=(VERSION,),
        columns=columns,
        status_subresource=False,
        required=("metadata", "spec"),
        properties={"operation": ANY},
        labels={"app.kubernetes.io/part-of": "argocd"},
    )


def application_crd() -> Obj:
    spec = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "required": ["destination"],
        "properties": {
            "project": STR,
            "source": _SOURCE,
            "sources": {"type": "array", "items": _SOURCE},
            "destination": {
                "type": "object",
                "properties": {"server": STR, "name": STR, "namespace": STR},
            },
            "syncPolicy": ANY,
            "ignoreDifferences": {"type": "array", "items": ANY},
            "info": {"type": "array", "items": ANY},
            "revisionHistoryLimit": {"type": "integer", "format": "int64"},
        },
    }
    return _crd(
        kind="Application", plural="applications", short=["app", "apps"], spec=spec,
        columns=_APP_COLUMNS,
    )  # fmt: skip


def app_project_crd() -> Obj:
    spec = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return _crd(
        kind="AppProject", plural="appprojects", short=["appproj", "appprojs"], spec=spec,
        columns=[],
    )  # fmt: skip


def application_set_crd() -> Obj:
    spec = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "required": ["generators", "template"],
        "properties": {"generators": {"type": "array", "items": ANY}, "template": ANY},
    }
    return _crd(
        kind="ApplicationSet", plural="applicationsets", short=["appset", "appsets"], spec=spec,
        columns=[],
    )  # fmt: skip


def crds() -> list[Obj]:
    return [application_crd(), app_project_crd(), application_set_crd()]
