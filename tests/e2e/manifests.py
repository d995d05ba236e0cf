"""Small manifests the end-to-end tests commit."""

from __future__ import annotations

import json
from typing import Any

from tests.support import builders
from tests.support.manifests import yaml_text


def configmap(
    name: str, data: dict[str, str], *, namespace: str = "default", wave: int | None = None
) -> str:
    annotations = f"  annotations: {{gitkrm.io/wave: '{wave}'}}\n" if wave is not None else ""
    return (
        "apiVersion: v1\nkind: ConfigMap\n"
        f"metadata:\n  name: {name}\n  namespace: {namespace}\n{annotations}"
        f"data: {json.dumps(data)}\n"
    )


def namespace(name: str) -> str:
    return f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"


def deployment(
    name: str, *, namespace: str = "default", replicas: int = 2, image: str, **spec: Any
) -> str:
    """A Deployment of one container `main` (tests.support.builders.deployment; keyword
    arguments are more `spec` fields, or `template_annotations`, `pod_spec`)."""
    return yaml_text(
        builders.deployment(
            name, namespace, replicas=replicas, image=image, container="main", **spec
        )
    )


def many_configmaps(
    prefix: str, count: int, *, namespace: str = "default", wave: int | None = None
) -> str:
    """`count` ConfigMaps in one multi-document file."""
    return "---\n".join(
        configmap(f"{prefix}-{i}", {"index": str(i)}, namespace=namespace, wave=wave)
        for i in range(count)
    )


def gitsource(name: str, url: str, **spec: object) -> str:
    body = {"url": url, **spec}
    return (
        "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\n"
        f"metadata:\n  name: {name}\nspec: {json.dumps(body)}\n"
    )


def kustomization(
    name: str,
    path: str,
    *,
    source: tuple[str, str] = ("GitRepository", "flux-system"),
    depends_on: tuple[str, ...] = (),
    wait: bool = True,
    timeout: str = "10m",
) -> str:
    """A Flux Kustomization in `flux-system` (JSON is YAML)."""
    spec: dict[str, object] = {
        "interval": "1h", "timeout": timeout, "path": path, "prune": True, "wait": wait,
        "sourceRef": {"kind": source[0], "name": source[1]},
    }  # fmt: skip
    if depends_on:
        spec["dependsOn"] = [{"name": d} for d in depends_on]
    body = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system"}, "spec": spec,
    }  # fmt: skip
    return json.dumps(body) + "\n"
