"""The strategic-merge metadata (`PatchMeta`) of a kind, for the patch engine.

Built-in kinds read `x-kubernetes-patch-*` from the pinned release's schemas (as the API
server does); custom kinds read list types from their CRD version's `openAPIV3Schema`.
One meta per kind, cached: building is lazy, so the cache only saves the lookup.
"""

from __future__ import annotations

import threading
from functools import cache

from gitkrm.errors import NotFound
from gitkrm.krm.refs import GVK
from gitkrm.patch import PatchMeta
from gitkrm.schema.openapi import definition_name, definitions
from gitkrm.schema.registry import Registry

_CUSTOM: dict[GVK, tuple[object, PatchMeta]] = {}  # by kind: (its schema, its meta)
_LOCK = threading.Lock()
_MAX_CUSTOM = 1024


@cache
def _builtin(gvk: GVK) -> PatchMeta | None:
    name = definition_name(gvk)
    if name is None:
        return None
    return PatchMeta.from_openapi(definitions(), name)


def patch_meta_for(gvk: GVK, *, registry: Registry | None = None) -> PatchMeta:
    """The PatchMeta of `gvk`: built-in kinds from the release schemas, custom kinds from
    the CRD registered in `registry`. NotFound for a kind neither knows."""
    schema = registry.custom_schema(gvk) if registry is not None else None
    if schema is None:
        meta = _builtin(gvk)
        if meta is None:
            raise NotFound(f'no matches for kind "{gvk.kind}" in version "{gvk.api_version}"')
        return meta
    with _LOCK:
        hit = _CUSTOM.get(gvk)
    if hit is not None and hit[0] is schema:
        return hit[1]
    meta = PatchMeta.from_schema(schema)
    with _LOCK:
        if len(_CUSTOM) >= _MAX_CUSTOM:
            _CUSTOM.pop(next(iter(_CUSTOM)))
        _CUSTOM[gvk] = (schema, meta)
    return meta
