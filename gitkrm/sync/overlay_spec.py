"""A kustomize overlay a source lays over what its path renders: the transforms Flux's
Kustomization (`targetNamespace`, `namePrefix`, `nameSuffix`, `patches`, `images`,
`components`, `commonMetadata`) and Argo CD's `spec.source.kustomize` (`namePrefix`,
`nameSuffix`, `namespace`, `images`, `patches`, `replicas`, `commonLabels`,
`commonAnnotations`, `components`) ask for. Plain values, light to import: the agent's
configuration holds them; the render applies them (`gitkrm.sync.overlay`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ImageOverride:
    """kustomize's `images` entry."""

    name: str
    new_name: str | None = None
    new_tag: str | None = None
    digest: str | None = None


@dataclass(frozen=True, slots=True)
class OverlayPatch:
    """kustomize's `patches` entry: a strategic merge or JSON 6902 patch (YAML or JSON
    text) and the target selector (kustomize's field names, as given)."""

    patch: str
    target: tuple[tuple[str, Any], ...] = ()
    path: str | None = None
    """A patch file instead of `patch` (Argo CD's `patches[].path`): relative to the source
    path, confined to the repository, read from the revision at render time."""


@dataclass(frozen=True, slots=True)
class Overlay:
    """Applied in kustomize's order over the rendered objects of a source."""

    namespace: str | None = None
    name_prefix: str = ""
    name_suffix: str = ""
    patches: tuple[OverlayPatch, ...] = ()
    images: tuple[ImageOverride, ...] = ()
    components: tuple[str, ...] = ()
    """Paths relative to the source path, as in Flux (confined to the repository)."""
    labels: tuple[tuple[str, str], ...] = ()
    """commonMetadata / commonLabels: set on every object (not on selectors for Flux)."""
    annotations: tuple[tuple[str, str], ...] = ()
    replicas: tuple[tuple[str, int], ...] = ()
    """kustomize's `replicas`: (workload name, count), Argo CD's `kustomize.replicas`."""

    @property
    def empty(self) -> bool:
        return self == Overlay()

    @property
    def outside_path(self) -> bool:
        """Whether the overlay reads files of the repository outside the source path (its
        snapshots then need the whole tree): components, or patch files."""
        return bool(self.components) or any(p.path is not None for p in self.patches)
