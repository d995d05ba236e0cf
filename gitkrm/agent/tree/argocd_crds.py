"""The CRDs of Argo CD's Application and AppProject that gitkrm registers under
`--interpret argocd` when the repository does not carry Argo CD's own (a repository holding
Argo CD's install manifest has them, and those are accepted as they are).

As Argo CD's: `argoproj.io/v1alpha1`, namespaced, short names `app`/`apps` and
`appproj`/`appprojs`, and NO status subresource (an Application's status is part of the
object, written with the object). The Application's printer columns are Argo CD's: Sync
Status, Health Status, and with `-o wide` Revision and Project. The schemas type the
fields gitkrm reads and keep the rest (`x-kubernetes-preserve-unknown-fields`): what
gitkrm does not honour is reported on the status rather than refused at admission.
"""

from __future__ import annotations

from typing import Any, Final

from gitkrm.krm import Obj

from .argocd_spec import GROUP, VERSION

_STR: Final = {"type": "string"}
_ANY: Final = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_SOURCE: Final = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
    "required": ["repoURL"],
    "properties": {"repoURL": _STR, "targetRevision": _STR, "path": _STR, "chart": _STR},
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
    schema = {
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "apiVersion": _STR,
            "kind": _STR,
            "metadata": {"type": "object"},
            "spec": spec,
            "status": _ANY,
            "operation": _ANY,
        },
    }
    version: dict[str, Any] = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
    }
    if columns:
        version["additionalPrinterColumns"] = columns
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{GROUP}",
            "labels": {
                "app.kubernetes.io/managed-by": "gitkrm",
                "gitkrm.io/interpret": "argocd",
                "app.kubernetes.io/part-of": "argocd",
            },
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short,
            },
            "scope": "Namespaced",
            "versions": [version],
        },
    }


def application_crd() -> Obj:
    spec = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "required": ["destination"],
        "properties": {
            "project": _STR,
            "source": _SOURCE,
            "sources": {"type": "array", "items": _SOURCE},
            "destination": {
                "type": "object",
                "properties": {"server": _STR, "name": _STR, "namespace": _STR},
            },
            "syncPolicy": _ANY,
            "ignoreDifferences": {"type": "array", "items": _ANY},
            "info": {"type": "array", "items": _ANY},
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


def crds() -> list[Obj]:
    return [application_crd(), app_project_crd()]
