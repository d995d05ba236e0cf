"""The strategic-merge metadata (`PatchMeta`) of a kind, for the patch engine.

Built-in kinds read `x-kubernetes-patch-*` from the pinned release's schemas (as the API
server does); custom kinds read list types from their CRD version's `openAPIV3Schema`.
One meta per kind, cached: building is lazy, so the cache only saves the lookup.
"""

from __future__ import annotations

from gitkrm.errors import NotFound
from gitkrm.krm.refs import GVK
from gitkrm.patch import PatchMeta
from gitkrm.schema.kindcache import KindCache
from gitkrm.schema.registry import Registry

_METAS: KindCache[PatchMeta] = KindCache(PatchMeta.from_openapi, PatchMeta.from_schema)


def patch_meta_for(gvk: GVK, *, registry: Registry | None = None) -> PatchMeta:
    """The PatchMeta of `gvk`: built-in kinds from the release schemas, custom kinds from
    the CRD registered in `registry`. NotFound for a kind neither knows."""
    meta = _METAS.custom(gvk, registry)
    if meta is None:
        meta = _METAS.builtin(gvk)
    if meta is None:
        raise NotFound(f'no matches for kind "{gvk.kind}" in version "{gvk.api_version}"')
    return meta
