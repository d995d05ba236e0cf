"""Flux objects for the interpreter's tests, and a `Context` over a dict of objects."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from gitkrm.agent.config import SourceConfig
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.krm.labels import parse_label_selector


def flux_object(
    api_version: str,
    kind: str,
    *,
    name: str,
    namespace: str,
    generation: int,
    defaults: dict[str, Any],
    spec: dict[str, Any],
) -> Obj:
    """A Flux object whose spec is `spec` over `defaults` (a None in `spec` drops the field)."""
    merged = {**defaults, **spec}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "generation": generation},
        "spec": {k: v for k, v in merged.items() if v is not None},
    }


def kustomization(name: str = "apps", namespace: str = "flux-system", **spec: Any) -> Obj:
    defaults = {
        "interval": "10m",
        "prune": True,
        "path": "./apps",
        "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
    }
    return flux_object(
        "kustomize.toolkit.fluxcd.io/v1",
        "Kustomization",
        name=name,
        namespace=namespace,
        generation=3,
        defaults=defaults,
        spec=spec,
    )


def git_repository(
    url: str, name: str = "flux-system", namespace: str = "flux-system", **spec: Any
) -> Obj:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"url": url, "interval": "1m", **spec},
    }


def secret(name: str, namespace: str = "flux-system", **data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


class Objects:
    """A `Context`: the parent source and the objects of a target."""

    def __init__(self, parent: SourceConfig, *objs: Obj) -> None:
        self._parent = parent
        self.objs = {ObjectRef.of(o).key: o for o in objs}

    @property
    def parent(self) -> SourceConfig:
        return self._parent

    async def get(self, ref: ObjectRef) -> Obj | None:
        return self.objs.get(ref.key)

    async def list(
        self, gvk: GVK, *, namespace: str, label_selector: str | None = None
    ) -> Sequence[Obj]:
        selector = parse_label_selector(label_selector or "")
        return [
            o
            for o in self.objs.values()
            if o.get("kind") == gvk.kind
            and str(o.get("apiVersion") or "").rpartition("/")[0] == gvk.group
            and o["metadata"].get("namespace") == namespace
            and selector.matches(o["metadata"].get("labels") or {})
        ]
