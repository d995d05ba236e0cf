"""Flux HelmRelease, HelmRepository and OCIRepository objects for the interpreter's tests."""

from __future__ import annotations

from typing import Any

from gitkrm.krm import Obj

from .flux_objects import flux_object


def helm_release(name: str = "podinfo", namespace: str = "apps", **spec: Any) -> Obj:
    defaults: dict[str, Any] = {
        "interval": "10m",
        "chart": {
            "spec": {
                "chart": "podinfo",
                "version": "^6",
                "sourceRef": {
                    "kind": "HelmRepository",
                    "name": "charts",
                    "namespace": "flux-system",
                },
            }
        },
    }
    return flux_object(
        "helm.toolkit.fluxcd.io/v2",
        "HelmRelease",
        name=name,
        namespace=namespace,
        generation=2,
        defaults=defaults,
        spec=spec,
    )


def helm_repository(
    url: str, name: str = "charts", namespace: str = "flux-system", **spec: Any
) -> Obj:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "HelmRepository",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"url": url, "interval": "1h", **spec},
    }


def oci_repository(url: str, name: str = "podinfo", namespace: str = "apps", **spec: Any) -> Obj:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "OCIRepository",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"url": url, "interval": "5m", **spec},
    }


def config_map(name: str, namespace: str = "apps", **data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }
