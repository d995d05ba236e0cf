"""Objects the store tests write."""

from __future__ import annotations

from typing import Any


def deployment(
    name: str, ns: str = "default", *, replicas: int = 1, **labels: str
) -> dict[str, Any]:
    app = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": {**app, **labels}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": app},
            "template": {
                "metadata": {"labels": app},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
            },
        },
    }


def configmap(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": dict(data),
    }


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def crd(
    group: str = "example.com", kind: str = "Widget", plural: str = "widgets"
) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "size": {"type": "integer"},
                                        "color": {"type": "string"},
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {"ready": {"type": "boolean"}},
                                },
                                "extra": {"type": "string"},
                            },
                        }
                    },
                }
            ],
        },
    }


def widget(name: str, ns: str = "default", size: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"size": size},
    }
