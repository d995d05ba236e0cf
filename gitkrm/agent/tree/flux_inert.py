"""Flux's kinds that gitkrm registers and stores but does not act on (`--interpret flux`).

`flux install` (and so `flux bootstrap`) installs notification-controller beside source-,
kustomize- and helm-controller, and source-controller serves HelmCharts and Buckets; a
repository that automates image updates carries image-reflector's and
image-automation's kinds. A repository whose `gotk-components.yaml` is a placeholder
(Flux's example repositories before bootstrap) has none of their CRDs, so every
Kustomization holding a Provider or an Alert would be refused as an "unknown kind". gitkrm
registers stand-ins for them as bootstrap would install the real ones: such objects are
applied, pruned and checked for drift like any other, but nothing acts on them, and the
log says so once per source and kind (`registry.inert`, noted by `children`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from gitkrm.krm import GroupKind, Obj

from .flux_crds import crd_object
from .flux_spec import SOURCE_GROUP
from .peercrd import ANY

_NOTIFICATION: Final = "notification.toolkit.fluxcd.io"
_IMAGE: Final = "image.toolkit.fluxcd.io"

# group, kind, plural, short names, versions served (the first stored), why it is inert
_KINDS: Final = (
    (_NOTIFICATION, "Provider", "providers", (), ("v1beta3", "v1beta2"),
     "gitkrm sends no Flux notifications (notification-controller's work)"),
    (_NOTIFICATION, "Alert", "alerts", (), ("v1beta3", "v1beta2"),
     "gitkrm sends no Flux notifications (notification-controller's work)"),
    (_NOTIFICATION, "Receiver", "receivers", (), ("v1", "v1beta2"),
     "gitkrm serves no Flux webhook receivers; it polls at each source's interval"),
    (SOURCE_GROUP, "HelmChart", "helmcharts", ("hc",), ("v1", "v1beta2"),
     "gitkrm builds no HelmChart artifacts (a HelmRelease's chart is rendered directly)"),
    (SOURCE_GROUP, "Bucket", "buckets", (), ("v1", "v1beta2"),
     "gitkrm fetches no Buckets (a Kustomization over one is an error)"),
    (_IMAGE, "ImageRepository", "imagerepositories", (), ("v1", "v1beta2"),
     "gitkrm scans no image registries (image-reflector-controller's work)"),
    (_IMAGE, "ImagePolicy", "imagepolicies", (), ("v1", "v1beta2"),
     "gitkrm selects no image tags (image-reflector-controller's work)"),
    (_IMAGE, "ImageUpdateAutomation", "imageupdateautomations", (), ("v1", "v1beta2"),
     "gitkrm commits no image updates (image-automation-controller's work)"),
)  # fmt: skip

INERT: Final[Mapping[GroupKind, str]] = {
    GroupKind(group=group, kind=kind): why for group, kind, _, _, _, why in _KINDS
}
"""Each inert kind and why nothing acts on it (the log's words)."""


def crds() -> list[Obj]:
    """Their stand-in CRDs (fresh objects): any spec kept, Flux's printer columns."""
    return [
        crd_object(
            group=group,
            kind=kind,
            plural=plural,
            short=list(short),
            spec=dict(ANY),
            versions=versions,
        )
        for group, kind, plural, short, versions, _ in _KINDS
    ]
