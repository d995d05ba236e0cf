"""One child of a source tree, and what the tree works with: its host and the context the
interpreters read through.

A `Child` is a declaring object (a GitSource, a Kustomization, an Application...) and the
child source it declares; the tree (`children.Tree`) keeps them by the object's
versionless key. The term is the tree's `Host`: it owns the runners and their workers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from gitkrm.errors import NotFound
from gitkrm.krm import GVK, Obj, ObjectRef, ResourceKey
from gitkrm.store import Store
from gitkrm.store.protocol import meta

from .model import ChildSpec, Interpreter
from .naming import child_name

if TYPE_CHECKING:
    from gitkrm.sync.hooks import Phase as HookPhase

    from ..config import SourceConfig
    from ..runner import SourceRunner


class Host(Protocol):
    """The term, as the tree asks it for runners."""

    def runner(self, name: str) -> SourceRunner | None:
        """A source of the term (configured or child) by name."""
        ...

    async def start_child(
        self, config: SourceConfig, *, parent: str, declared_by: ObjectRef
    ) -> SourceRunner:
        """A new child source (its GitSource object, runner and, long-lived, worker)."""
        ...

    async def remembered(self, parent: str) -> dict[str, ObjectRef]:
        """The children `parent` declared, as their GitSource objects remember them
        (also those of an earlier run): child name -> declaring object."""
        ...

    async def reconfigure_child(self, name: str, config: SourceConfig) -> None:
        """The declaring object changed: the child's next sync uses `config`."""
        ...

    async def stop_child(self, name: str) -> None:
        """Stop and forget the child (its worker, runner and GitSource object)."""
        ...

    def request_sync(self, name: str) -> None:
        """Ask the child for a sync (long-lived; `run --once` orders its syncs itself)."""
        ...

    async def last_revision(self, name: str) -> str | None:
        """The revision a source last synced (its runner's, or its GitSource's status)."""
        ...

    async def delete_hooks(
        self, name: str, config: SourceConfig, phase: HookPhase, *, revision: str | None
    ) -> list[str]:
        """Run a removed child's PreDelete or PostDelete hooks of `revision`: failures."""
        ...

    async def healthy(self, runner: SourceRunner) -> str | None:
        """Wait for the health of a source's objects: None when Current, else why not."""
        ...


@dataclass(frozen=True, slots=True)
class ReadContext:
    """The interpreters' `Context`; `seen` records the resourceVersion of each object read
    (None: absent), so that a change to one of a child's `reads` is told from an echo."""

    parent: SourceConfig
    store: Store
    seen: dict[ResourceKey, str | None] = field(default_factory=dict)

    async def get(self, ref: ObjectRef) -> Obj | None:
        try:
            obj = await self.store.get(ref)
        except NotFound:
            self.seen[child_key(ref)] = None
            return None
        self.seen[child_key(ref)] = str(meta(obj).get("resourceVersion") or "")
        return obj

    async def list(
        self, gvk: GVK, *, namespace: str, label_selector: str | None = None
    ) -> Sequence[Obj]:
        try:
            listed = await self.store.list(gvk, namespace, label_selector=label_selector)
        except NotFound:
            return []
        items: list[Obj] = listed.get("items") or []
        return items


@dataclass(eq=False)
class Child:
    """One declaring object and the child source it declares."""

    ref: ObjectRef  # versionless
    parent: str
    interpreter: Interpreter
    obj: Obj
    spec: ChildSpec | None = None
    error: str | None = None
    runner: SourceRunner | None = None
    finalizer: str | None = None
    """The finalizer the tree put on the object (lifted when the child is removed)."""
    waiting_for: tuple[ObjectRef, ...] = ()
    deleting: bool = False
    pending: bool = field(default=False)
    """Its dependencies were not Ready at its last turn (synced when they are)."""
    read_versions: dict[ResourceKey, str | None] = field(default_factory=dict)
    """The `spec.reads` objects as they were read (resourceVersion; None: absent)."""
    health_failed: tuple[str | None, str] | None = None
    """(revision, why) of the last wait on its objects' health when it ended unhealthy (a
    timeout): its status says so (Flux's HealthCheckFailed) until they are Current or
    another revision is synced."""

    @property
    def name(self) -> str:
        return child_name(self.ref)

    @property
    def mirrors_parent(self) -> bool:
        return self.spec is not None and self.spec.same_as_parent


def child_key(ref: ObjectRef) -> ResourceKey:
    """The key of a declaring object whatever version names it."""
    return dataclasses.replace(ref, version=None).key


def child_keys(refs: Sequence[ObjectRef]) -> set[ResourceKey]:
    return {child_key(r) for r in refs}
