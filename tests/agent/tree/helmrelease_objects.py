"""Flux HelmRelease, HelmRepository and OCIRepository objects for the interpreter's tests."""

from __future__ import annotations

from typing import Any

from gitkrm.krm import Obj


def helm_release(name: str = "podinfo", namespace: str = "apps", **spec: Any) -> Obj:
    base: dict[str, Any] = {
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
    base.update(spec)
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": namespace, "generation": 2},
        "spec": {k: v for k, v in base.items() if v is not None},
    }


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
