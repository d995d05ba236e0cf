"""The structured-merge-diff type (`SchemaType`) of a kind, for server-side apply.

Built-in kinds read the pinned release's schemas (list types, map types, patch
strategies, as the API server's type converter does); custom kinds their CRD version's
`openAPIV3Schema`; a kind neither knows is deduced (maps granular, lists atomic). One
type per kind, cached; types resolve lazily, so the cache only saves the lookup.
"""

from __future__ import annotations

import threading
from functools import cache

from gitkrm.krm.refs import GVK
from gitkrm.patch.fieldmanager import SchemaType
from gitkrm.schema.openapi import definition_name, definitions
from gitkrm.schema.registry import Registry

_CUSTOM: dict[GVK, tuple[object, SchemaType]] = {}  # by kind: (its schema, its type)
_LOCK = threading.Lock()
_MAX_CUSTOM = 1024


@cache
def _builtin(gvk: GVK) -> SchemaType | None:
    name = definition_name(gvk)
    if name is None:
        return None
    return SchemaType.from_openapi(definitions(), name)


def ssa_type_for(gvk: GVK, *, registry: Registry | None = None) -> SchemaType:
    """The SchemaType of `gvk`: the CRD's schema when `registry` serves it as a custom
    kind, else the built-in schema, else deduced."""
    schema = registry.custom_schema(gvk) if registry is not None else None
    if schema is None:
        return _builtin(gvk) or SchemaType.deduced()
    with _LOCK:
        hit = _CUSTOM.get(gvk)
    if hit is not None and hit[0] is schema:
        return hit[1]
    typ = SchemaType.from_schema(schema)
    with _LOCK:
        if len(_CUSTOM) >= _MAX_CUSTOM:
            _CUSTOM.pop(next(iter(_CUSTOM)))
        _CUSTOM[gvk] = (schema, typ)
    return typ
