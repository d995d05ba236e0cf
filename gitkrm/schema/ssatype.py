"""The structured-merge-diff type (`SchemaType`) of a kind, for server-side apply.

Built-in kinds read the pinned release's schemas (list types, map types, patch
strategies, as the API server's type converter does); custom kinds their CRD version's
`openAPIV3Schema`; a kind neither knows is deduced (maps granular, lists atomic). One
type per kind, cached; types resolve lazily, so the cache only saves the lookup.
"""

from __future__ import annotations

from gitkrm.krm.refs import GVK
from gitkrm.patch.fieldmanager import SchemaType
from gitkrm.schema.kindcache import KindCache
from gitkrm.schema.registry import Registry

_TYPES: KindCache[SchemaType] = KindCache(SchemaType.from_openapi, SchemaType.from_schema)


def ssa_type_for(gvk: GVK, *, registry: Registry | None = None) -> SchemaType:
    """The SchemaType of `gvk`: the CRD's schema when `registry` serves it as a custom
    kind, else the built-in schema, else deduced."""
    typ = _TYPES.custom(gvk, registry)
    if typ is None:
        typ = _TYPES.builtin(gvk)
    return typ if typ is not None else SchemaType.deduced()
