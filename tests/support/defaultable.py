"""Objects as Git holds them, leaving out what the API server defaults (#22): a Deployment
with `strategy: {}`, an empty `resources` and an env `fieldRef` without `apiVersion`; a
StatefulSet whose `volumeClaimTemplates` have no `volumeMode` or `status`; a custom resource
whose CRD's schema defaults its fields. Re-applying any of them unchanged must be a no-op,
in the store, through kubectl and through `gitkrm run --apply-mode server-side`.

Each returns a fresh plain dict; `tests.support.manifests.yaml_text` makes it the text a
client sends."""

from __future__ import annotations

from typing import Any

from gitkrm.krm import Obj
from tests.support import builders


def deployment(
    name: str = "web",
    namespace: str = "default",
    *,
    replicas: int | None = None,
    image: str = "nginx",
    pod_env: bool = True,
    **template_md: Any,
) -> Obj:
    """A Deployment of one container `web` selecting `app: <name>`; `replicas` only when
    given, an env `POD` from a fieldRef unless `pod_env` is False; keyword arguments are
    extra fields of the pod template's metadata (`creationTimestamp=None`, as kubectl's
    `create --dry-run -o yaml` writes it)."""
    container: dict[str, Any] = {"name": "web", "image": image}
    if pod_env:
        container["env"] = [
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
        ]
    container["resources"] = {}
    spec: dict[str, Any] = {} if replicas is None else {"replicas": replicas}
    spec |= {
        "selector": {"matchLabels": {"app": name}},
        "strategy": {},
        "template": {
            "metadata": {"labels": {"app": name}, **template_md},
            "spec": {"containers": [container]},
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {},
    }


def statefulset(
    name: str = "db",
    namespace: str = "default",
    *,
    replicas: int | None = None,
    image: str = "postgres",
    storage: str = "1Gi",
) -> Obj:
    """A StatefulSet of one container `db` with one volume claim template `data` of
    `storage`; `replicas` only when given."""
    spec: dict[str, Any] = {"serviceName": name}
    if replicas is not None:
        spec["replicas"] = replicas
    spec |= {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "db", "image": image}]},
        },
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": storage}},
                },
            }
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


GADGET_SPEC: dict[str, Any] = {
    "size": {"type": "integer", "default": 3},
    "ports": {
        "type": "array",
        "x-kubernetes-list-type": "atomic",
        "items": {
            "type": "object",
            "properties": {
                "port": {"type": "integer"},
                "protocol": {"type": "string", "default": "TCP"},
            },
        },
    },
}


def gadget_crd() -> Obj:
    """The CRD of example.com/v1 Gadget: `spec.size` defaults to 3, and each of the atomic
    list `spec.ports` to protocol TCP."""
    return builders.crd("Gadget", status_subresource=False, spec=GADGET_SPEC)


def gadget(name: str = "g", namespace: str = "default") -> Obj:
    """A Gadget that sets only `spec.ports: [{port: 80}]` (the rest is the schema's)."""
    return builders.custom_resource("Gadget", name, namespace, ports=[{"port": 80}])
