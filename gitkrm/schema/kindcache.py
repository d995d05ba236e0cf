"""What a kind's schema makes (a `PatchMeta`, a `SchemaType`), one per kind, cached.

Built-in kinds read the pinned release's schemas; custom kinds their CRD version's
`openAPIV3Schema`, made again when the registry serves another schema for the kind. What
is made resolves lazily, so the cache only saves the lookup.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from functools import cache
from typing import Generic, TypeVar

from gitkrm.krm.refs import GVK
from gitkrm.schema.openapi import definition_name, definitions
from gitkrm.schema.registry import Registry

T = TypeVar("T")

MAX_CUSTOM = 1024  # custom kinds kept at most (the oldest goes first)


class KindCache(Generic[T]):
    def __init__(
        self,
        from_openapi: Callable[[Mapping[str, object], str], T],
        from_schema: Callable[[Mapping[str, object]], T],
    ) -> None:
        self._from_openapi = from_openapi
        self._from_schema = from_schema
        self._custom: dict[GVK, tuple[object, T]] = {}  # by kind: (its schema, what it made)
        self._lock = threading.Lock()
        self.builtin = cache(self._builtin)

    def _builtin(self, gvk: GVK) -> T | None:
        """Of a built-in kind (None for a kind the release does not have)."""
        name = definition_name(gvk)
        if name is None:
            return None
        return self._from_openapi(definitions(), name)

    def custom(self, gvk: GVK, registry: Registry | None) -> T | None:
        """Of a custom kind that `registry` serves (None for any other kind)."""
        schema = registry.custom_schema(gvk) if registry is not None else None
        if schema is None:
            return None
        with self._lock:
            hit = self._custom.get(gvk)
        if hit is not None and hit[0] is schema:
            return hit[1]
        made = self._from_schema(schema)
        with self._lock:
            if len(self._custom) >= MAX_CUSTOM:
                self._custom.pop(next(iter(self._custom)))
            self._custom[gvk] = (schema, made)
        return made
