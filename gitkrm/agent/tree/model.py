"""The contract between the source tree and the interpreters of declaring objects.

A *declaring object* is an object a source applied that declares another source: a
GitSource of gitkrm, a Flux Kustomization, an Argo CD Application. An `Interpreter` reads
one peer's declaring objects into a `ChildSpec` (what to sync, as a `SourceConfig`, plus
what the tree needs: order, finalizer, fields not honoured) and writes the object's status
in the peer's own form from a `ChildState`. The tree (`gitkrm.agent.tree.children`) runs
the children; it knows no peer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from gitkrm.krm import GVK, GroupKind, Obj, ObjectRef

if TYPE_CHECKING:
    from gitkrm.health import Health

    from ..config import SourceConfig
    from ..status import Outcome


class Peer(StrEnum):
    """What `spec.interpret` / `--interpret` may name. gitkrm's own GitSource objects are
    always children: they need no opt-in."""

    FLUX = "flux"
    ARGOCD = "argocd"


@dataclass(frozen=True, slots=True)
class Unhonoured:
    """A field of a declaring object gitkrm does not honour, and why: shown on the object's
    status and in the log, never dropped silently."""

    field: str  # a JSON path as the user wrote it, e.g. "spec.serviceAccountName"
    reason: str


@dataclass(frozen=True, slots=True)
class Refused:
    """Why the peer would not sync a child although its object reads (an Argo CD
    project's rule): `reason` is the peer's condition type (Argo CD's InvalidSpecError)."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """One child source, as its declaring object asks for it."""

    declared_by: ObjectRef
    config: SourceConfig
    """Name: `tree.naming.child_name` of the declaring object. `url`/`ref` are the parent's
    when the object names the parent's repository (or `.` for a GitSource)."""
    depends_on: tuple[ObjectRef, ...] = ()
    """Declaring objects (of the same peer) that must be Ready first."""
    wait: bool = False
    """Ready only when the child's objects are healthy (Flux `wait`, Argo CD always)."""
    health_checks: tuple[ObjectRef, ...] = ()
    """Extra objects whose health makes the child Ready (Flux `healthChecks`)."""
    finalizer: str | None = None
    """Put on the declaring object while the child runs: its deletion prunes the child's
    objects (when `config.prune`) before the finalizer is removed (never a hang)."""
    unhonoured: tuple[Unhonoured, ...] = ()
    same_as_parent: bool = False
    """The object declares the source that applied it (Flux's bootstrap `flux-system`
    Kustomization over its own path): no child runs; its status mirrors the parent's."""
    refused: tuple[Refused, ...] = ()
    """While set no child runs (a running one stops; its objects stay): the object's
    status says why. Deleting the object still finalizes the child (its objects pruned
    by its finalizer), so it never hangs."""
    reads: tuple[ObjectRef, ...] = ()
    """Objects other than the declaring one the spec was read from (an Argo CD
    AppProject, also one that does not exist yet): a change to one re-reads the object."""


class Phase(StrEnum):
    PENDING = "Pending"  # waiting for dependsOn
    SYNCING = "Syncing"
    SYNCED = "Synced"
    FAILED = "Failed"
    SUSPENDED = "Suspended"
    DELETING = "Deleting"
    REFUSED = "Refused"  # ChildSpec.refused: not synced


@dataclass(frozen=True, slots=True)
class ChildState:
    """What a child source has come to, for its declaring object's status."""

    phase: Phase
    outcome: Outcome | None = None
    """Its last sync (None before the first)."""
    health: Health | None = None
    """The aggregate health of its objects (None when not followed)."""
    health_message: str = ""
    inventory: Sequence[ObjectRef] = ()
    object_health: Mapping[ObjectRef, Health] = field(default_factory=dict)
    """Each object's health, where known (Argo CD's `status.resources[].health`)."""
    waiting_for: tuple[ObjectRef, ...] = ()
    unhonoured: tuple[Unhonoured, ...] = ()
    error: str | None = None
    """Why the object could not be read into a child (an invalid spec), or the sync error."""
    observed_generation: int | None = None
    resolved_ref: str | None = None
    """The tag a semver range resolved to at the last sync's revision (Flux names it in
    its revisions: `v1.2.0@sha1:<sha>`); None for other refs."""
    spec: ChildSpec | None = None
    """The child this is the state of (None when the object could not be read): its ref
    and URL, which the peer's status names (Flux's `main@sha1:<sha>` revisions)."""
    details: Mapping[str, str] = field(default_factory=dict)
    """What the child's source says of its last snapshot (an ArtifactGenerator's child:
    artifact name -> digest, for the generator's inventory)."""


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """A status an interpreter gives an object its declaring object reads from (a Flux
    GitRepository or HelmRepository): in the peer, another controller writes it; under
    gitkrm the child that fetched the source knows it. `status` maps the live object to
    its whole new `status`."""

    ref: ObjectRef
    status: Callable[[Obj], Obj]


class Context(Protocol):
    """What an interpreter may read besides the object."""

    @property
    def parent(self) -> SourceConfig:
        """The source that applied the declaring object."""
        ...

    async def get(self, ref: ObjectRef) -> Obj | None:
        """An object of the target (a GitRepository, a credentials Secret); None if absent."""
        ...

    async def list(
        self, gvk: GVK, *, namespace: str, label_selector: str | None = None
    ) -> Sequence[Obj]:
        """Objects of a kind in a namespace (Argo CD's repository Secrets, found by their
        `argocd.argoproj.io/secret-type` label); empty when the kind is not served."""
        ...


class Interpreter(Protocol):
    """One peer's declaring objects. Pure but for `Context.get`."""

    peer: Peer | None  # None: gitkrm's own GitSource
    kinds: frozenset[GroupKind]
    """The declaring kinds (e.g. Kustomization.kustomize.toolkit.fluxcd.io)."""

    async def child(self, obj: Obj, ctx: Context) -> ChildSpec:
        """The child source `obj` declares; `gitkrm.errors.ManifestError` (naming the
        object and field) when it cannot be read. Objects the child needs but which are
        not declaring (a GitRepository) are read through `ctx`."""
        ...

    def status(self, obj: Obj, state: ChildState) -> Obj:
        """The object's whole `status` in the peer's form (conditions via krm.conditions)."""
        ...

    def crds(self) -> Sequence[Obj]:
        """The peer's CRDs gitkrm registers when the repository does not carry them."""
        ...

    def source_statuses(self, obj: Obj, state: ChildState) -> Sequence[SourceStatus]:
        """Statuses of the objects `obj` reads its source from (empty: none to write)."""
        ...


@dataclass(frozen=True, slots=True)
class Interpreters:
    """The interpreters a source uses (`tree.registry.for_source` picks them by its
    `interpret`): gitkrm's GitSource one first, then one per peer named."""

    all: tuple[Interpreter, ...] = field(default=())

    @property
    def kinds(self) -> frozenset[GroupKind]:
        """Every declaring kind of these interpreters."""
        return frozenset(k for i in self.all for k in i.kinds)

    def for_kind(self, kind: GroupKind) -> Interpreter | None:
        """The interpreter of a declaring kind (None: not a declaring kind here)."""
        return next((i for i in self.all if kind in i.kinds), None)
