"""Objects the store tests write: tests.support's builders with the store tests' defaults
(an image with a tag, a `data` field on every ConfigMap, a Widget kind with a status and a
top-level `extra` field whose changes bump the generation)."""

from __future__ import annotations

from typing import Any

from tests.support import builders


def deployment(
    name: str, ns: str = "default", *, replicas: int = 1, **labels: str
) -> dict[str, Any]:
    return builders.deployment(name, ns, replicas=replicas, image="nginx:1.25", labels=labels)


def configmap(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return builders.configmap(name, ns, data=data)


def namespace(name: str) -> dict[str, Any]:
    return builders.namespace(name)


def crd(
    group: str = "example.com", kind: str = "Widget", plural: str = "widgets"
) -> dict[str, Any]:
    out = builders.crd(kind, group, plural=plural, status={"ready": {"type": "boolean"}})
    schema = out["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["extra"] = {"type": "string"}
    return out


def widget(name: str, ns: str = "default", size: int = 1) -> dict[str, Any]:
    return builders.custom_resource("Widget", name, ns, size=size)
