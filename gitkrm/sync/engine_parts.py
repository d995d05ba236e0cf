"""What the steps of a sync engine share: the store, the source's settings, the engine's
memory and drift tracker, and what the last render's registry says about kinds.

The engine is split by step, as Flux's ssa manager (apply, diff, wait) and gitops-engine's
sync context (tasks, hooks) are: `engine_render`, `engine_plan`, `engine_apply`,
`engine_gates` and `engine_hooks` each take this one bundle instead of reaching into one
another's state; `engine.SyncEngine` strings them together.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gitkrm.cache import WatchCache
from gitkrm.errors import NotFound
from gitkrm.krm import GVK, GroupKind, Obj, ObjectRef
from gitkrm.patch import PatchMeta
from gitkrm.patch.fieldmanager import SchemaType
from gitkrm.schema import patch_meta_for, ssa_type_for
from gitkrm.store import Store
from gitkrm.sync.drift import DriftTracker
from gitkrm.sync.memo import EngineMemo
from gitkrm.sync.modes import builtin_defaults
from gitkrm.sync.options import SyncOptions


def ms_since(start: float) -> float:
    """Milliseconds since `start` (a `time.perf_counter()`), for a result's timings."""
    return (time.perf_counter() - start) * 1000


@dataclass(slots=True, eq=False)
class EngineParts:
    """One engine's collaborators (see the module docstring)."""

    store: Store
    options: SyncOptions
    memo: EngineMemo
    tracker: DriftTracker
    cache: WatchCache | None = None  # the store's shared watch cache, if any
    before_wait: Callable[[], Awaitable[None]] | None = None  # see `SyncEngine.before_wait`

    def meta(self, gvk: GVK) -> PatchMeta | None:
        """Strategic-merge metadata of a built-in kind; None for custom resources."""
        reg = self.memo.registry
        if reg is not None and reg.custom_schema(gvk) is not None:
            return None
        try:
            return patch_meta_for(gvk)
        except NotFound:
            return None

    def typ(self, gvk: GVK) -> SchemaType:
        """The server-side apply type of a kind (a CRD's schema for custom resources)."""
        return ssa_type_for(gvk, registry=self.memo.registry)

    def defaults(self, gvk: GVK) -> Callable[[Obj], None] | None:
        """What the store's admission does to an update of the kind (a CRD's defaults)."""
        reg = self.memo.registry
        if reg is None:
            return builtin_defaults(gvk)
        return reg.update_defaulter(gvk)

    def read_gvk(self, ref: ObjectRef) -> GVK:
        """A version to read an object at (for objects only the inventory names, and for
        the agent's health reads): the served version the last render knew, else none."""
        reg = self.memo.registry
        if reg is not None:
            versions = reg.versions_of(GroupKind(group=ref.group, kind=ref.kind))
            if versions:
                return versions[0].gvk
        return GVK(group=ref.group, version="", kind=ref.kind)
