"""The shape of the peers' CRDs gitkrm registers as stand-ins (Flux's, Argo CD's): one
builder, so each peer's module says only what differs (versions, status subresource,
printer columns, the fields it types)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from gitkrm.krm import Obj

STR: Final = {"type": "string"}
ANY: Final = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def peer_crd(
    *,
    peer: str,
    group: str,
    kind: str,
    plural: str,
    short: Sequence[str],
    spec: dict[str, Any],
    versions: Sequence[str],
    columns: Sequence[Mapping[str, Any]],
    status_subresource: bool,
    required: Sequence[str] = (),
    properties: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Obj:
    """A namespaced CRD of `peer`: `versions` served, the first stored; `properties`
    beside `spec` and `status` in the schema; the status subresource only when the peer's
    own CRD has one (Argo CD's Application has none)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "apiVersion": STR,
            "kind": STR,
            "metadata": {"type": "object"},
            "spec": spec,
            "status": ANY,
            **(properties or {}),
        },
    }
    if required:
        schema["required"] = list(required)
    served: list[dict[str, Any]] = []
    for v in versions:
        version: dict[str, Any] = {
            "name": v,
            "served": True,
            "storage": v == versions[0],
            "schema": {"openAPIV3Schema": schema},
        }
        if status_subresource:
            version["subresources"] = {"status": {}}
        if columns:
            version["additionalPrinterColumns"] = list(columns)
        served.append(version)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            "labels": {
                "app.kubernetes.io/managed-by": "gitkrm",
                "gitkrm.io/interpret": peer,
                **(labels or {}),
            },
        },
        "spec": {
            "group": group,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": list(short),
            },
            "scope": "Namespaced",
            "versions": served,
        },
    }
