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


def flux_object(
    api_version: str, kind: str, name: str, spec: dict[str, Any], *, namespace: str = "flux-system"
) -> str:
    """A Flux object as one line of JSON (JSON is YAML); a None in `spec` leaves the field
    out."""
    body = {
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {k: v for k, v in spec.items() if v is not None},
    }  # fmt: skip
    return json.dumps(body) + "\n"


def kustomization(
    name: str,
    path: str,
    *,
    source: tuple[str, str] = ("GitRepository", "flux-system"),
    depends_on: tuple[str, ...] = (),
    interval: str = "1h",
    wait: bool | None = True,
    timeout: str | None = "10m",
    namespace: str = "flux-system",
    **spec: Any,
) -> str:
    """A Flux Kustomization (in `flux-system` unless `namespace` says otherwise); keyword
    arguments are more of its spec (`targetNamespace=...`, `postBuild=...`), None for
    `wait` or `timeout` leaves it out."""
    fields: dict[str, Any] = {
        "interval": interval, "timeout": timeout, "path": path, "prune": True, "wait": wait,
        "sourceRef": {"kind": source[0], "name": source[1]},
    }  # fmt: skip
    if depends_on:
        fields["dependsOn"] = [{"name": d} for d in depends_on]
    kind = ("kustomize.toolkit.fluxcd.io/v1", "Kustomization")
    return flux_object(*kind, name, fields | spec, namespace=namespace)


def git_repository(name: str, url: str, *, interval: str = "1m", **spec: Any) -> str:
    """A Flux GitRepository in `flux-system` following `main` (unless `ref=` says otherwise);
    keyword arguments are more of its spec (`secretRef=...`)."""
    fields = {"url": url, "interval": interval, "ref": {"branch": "main"}, **spec}
    return flux_object("source.toolkit.fluxcd.io/v1", "GitRepository", name, fields)


def helm_release(name: str, *, target: str, interval: str = "10m", **spec: Any) -> str:
    """A Flux HelmRelease in `flux-system` installing into the namespace `target`; keyword
    arguments are more of its spec (`chart=...` or `chartRef=...`, `values=...`)."""
    fields = {"interval": interval, "targetNamespace": target, **spec}
    return flux_object("helm.toolkit.fluxcd.io/v2", "HelmRelease", name, fields)


def chart_in_git(path: str) -> dict[str, Any]:
    """A HelmRelease's `chart` at `path` of the GitRepository flux-system."""
    return {"spec": {"chart": path, "sourceRef": {"kind": "GitRepository", "name": "flux-system"}}}
