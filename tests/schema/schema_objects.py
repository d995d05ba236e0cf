"""Objects for the schema tests (a module of its own so tests can import it)."""

from __future__ import annotations

import copy
from typing import Any


def deployment(name: str = "web", **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx:1.27",
                            "ports": [{"containerPort": 80}],
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        }
                    ]
                },
            },
        },
    }
    obj["spec"].update(spec)
    return obj


def service(name: str = "web", **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}]},
    }
    obj["spec"].update(spec)
    return obj


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def clone(obj: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(obj)
