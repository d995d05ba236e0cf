"""The children of a term's sources: declaring objects read into child sources, kept in
step with each parent's syncs, ordered by `dependsOn`, finalized when deleted, and their
state written back onto the declaring objects.

After every pass of a source (its sync or drift check), `Tree.after_pass` reads the
declaring objects the source's inventory names (kinds: its interpreters'), and for each:
a new one starts a child source (a `SourceRunner` the term makes: own interval,
inventory, prune, health, GitSource object, reports into Git), an edited one
reconfigures it, a deleted one (its deletionTimestamp set: the parent pruned it, or a user
deleted it) stops it, prunes its objects when the child prunes, and lifts the finalizer
the tree put on the object while the child ran. The tree never starts a child that is
its parent again (`same_as_parent`: its status mirrors the parent's) or one of its
ancestors (a cycle: an error on the object). The term (`Host`) owns the runners and their
workers; the tree decides which exist.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from gitkrm.errors import BadRequest, Conflict, GitkrmError, NotFound
from gitkrm.health import Health, aggregate
from gitkrm.krm import GVK, Obj, ObjectRef, ResourceKey
from gitkrm.store import BatchOp, BatchOpKind, Store
from gitkrm.store.protocol import meta
from gitkrm.sync import inventory

from . import registry, removal, sourcewrites
from .gitsource import FINALIZER as GITKRM_FINALIZER
from .model import ChildSpec, ChildState, Interpreter, Phase, SourceStatus
from .naming import child_name, describe

if TYPE_CHECKING:
    from gitkrm.sync.hooks import Phase as HookPhase

    from ..config import SourceConfig
    from ..runner import SourceRunner

log = logging.getLogger("gitkrm.agent")


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
class _Context:
    """The interpreters' `Context`; `seen` records the resourceVersion of each object read
    (None: absent), so that a change to one of a child's `reads` is told from an echo."""

    parent: SourceConfig
    store: Store
    seen: dict[ResourceKey, str | None] = field(default_factory=dict)

    async def get(self, ref: ObjectRef) -> Obj | None:
        try:
            obj = await self.store.get(ref)
        except NotFound:
            self.seen[_key(ref)] = None
            return None
        self.seen[_key(ref)] = str(meta(obj).get("resourceVersion") or "")
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

    @property
    def name(self) -> str:
        return child_name(self.ref)

    @property
    def mirrors_parent(self) -> bool:
        return self.spec is not None and self.spec.same_as_parent


def _key(ref: ObjectRef) -> ResourceKey:
    return dataclasses.replace(ref, version=None).key


def _keys(refs: Sequence[ObjectRef]) -> set[ResourceKey]:
    return {_key(r) for r in refs}


def _where(config: SourceConfig) -> tuple[str, object, str, object]:
    """What a source syncs: repository, ref, path, and what it makes of them (an
    artifact of the repository, or an ArtifactGenerator's objects, is other content)."""
    path = "/".join(x for x in config.path.split("/") if x not in ("", "."))
    made = config.artifact or config.generator or config.oci
    return config.safe_url.rstrip("/").removesuffix(".git"), config.ref, path, made


class Tree:
    """See the module docstring."""

    def __init__(self, host: Host, *, store: Store, agent_name: str) -> None:
        self._host = host
        self._store = store
        self._agent_name = agent_name
        self.children: dict[ResourceKey, Child] = {}
        self.written: set[int] = set()
        """Store revisions of the tree's writes (finalizers, statuses): the agent's own."""
        self._dirty: set[ResourceKey] = set()
        self._whole: set[tuple[str, str]] = set()
        """(group, kind) of declaring kinds without a status subresource (Argo CD's
        Application): their status is written with the object (`update`)."""

    # -- lookups -----------------------------------------------------------------------

    def by_name(self, name: str) -> Child | None:
        return next((c for c in self.children.values() if c.name == name), None)

    def parent_of(self, name: str) -> str | None:
        child = self.by_name(name)
        return None if child is None else child.parent

    def _lineage(self, name: str) -> Iterator[str]:
        """`name`, its parent, its parent's parent ... up to a configured source."""
        seen: set[str] = set()
        current: str | None = name
        while current is not None and current not in seen:
            seen.add(current)
            yield current
            current = self.parent_of(current)

    def runnable(self) -> list[Child]:
        """The children that run a source, in the order they were declared."""
        return [c for c in self.children.values() if c.runner is not None and not c.deleting]

    def problems(self) -> list[str]:
        """The errors of declaring objects that run no child (invalid, a cycle, refused)."""
        out = []
        for c in self.children.values():
            if c.error:
                out.append(f"{describe(c.ref)}: {c.error}")
            elif c.spec is not None and c.spec.refused and not c.deleting:
                out.extend(f"{describe(c.ref)}: {r.message}" for r in c.spec.refused)
        return out

    def read_kinds(self) -> set[GVK]:
        """The kinds of the objects children's specs were read from (`ChildSpec.reads`)."""
        return {
            GVK(group=r.group, version=r.version or "", kind=r.kind)
            for c in self.children.values()
            if c.spec is not None
            for r in c.spec.reads
        }

    def readers(self, key: ResourceKey, resource_version: str | None) -> list[str]:
        """The parents of the children that read the object `key` at another version than
        `resource_version` (None: gone): their passes re-read those children."""
        return sorted(
            {
                c.parent
                for c in self.children.values()
                if key in c.read_versions and c.read_versions[key] != resource_version
            }
        )

    # -- after a parent's pass ---------------------------------------------------------

    async def after_pass(self, parent: SourceRunner) -> None:
        """Bring `parent`'s children in step with the declaring objects it applied."""
        interpreters = registry.for_peers(parent.config.interpret)
        try:
            inv = await inventory.read(
                self._store,
                source=parent.name,
                inventory_id=f"{self._agent_name}.{parent.name}",
            )
        except GitkrmError as e:
            log.error("source %s: its children not read: %s", parent.name, e.message)
            return
        seen: set[ResourceKey] = set()
        for ref in inv.refs():
            interpreter = interpreters.for_kind(ref.group_kind)
            if interpreter is None:
                continue
            try:
                obj = await self._store.get(ref)
            except NotFound:
                continue
            except GitkrmError as e:
                log.error("source %s: %s not read: %s", parent.name, describe(ref), e.message)
                continue
            seen.add(_key(ref))
            await self._declared(parent, interpreter, obj)
        for child in [c for c in self.children.values() if c.parent == parent.name]:
            if _key(child.ref) not in seen:
                await self._undeclared(child)
        try:
            remembered = await self._host.remembered(parent.name)
        except GitkrmError as e:
            log.debug("source %s: children of earlier runs not read: %s", parent.name, e.message)
            remembered = {}
        for ref in remembered.values():
            interpreter = interpreters.for_kind(ref.group_kind)
            if _key(ref) in seen or _key(ref) in self.children or interpreter is None:
                continue
            # Declared by an earlier run, no longer applied (deleted, or left in place).
            await self._earlier(parent, interpreter, ref)
        if parent.last_outcome is not None:
            for child in self.children.values():
                if child.parent == parent.name and child.mirrors_parent:
                    self._dirty.add(_key(child.ref))
        await self.flush()

    async def _declared(self, parent: SourceRunner, interpreter: Interpreter, obj: Obj) -> None:
        ref = dataclasses.replace(ObjectRef.of(obj), version=None)
        key = ref.key
        child = self.children.get(key)
        if child is None:
            child = Child(ref=ref, parent=parent.name, interpreter=interpreter, obj=obj)
            self.children[key] = child
        child.obj = obj
        self._dirty.add(key)
        ctx = _Context(parent=parent.config, store=self._store)
        try:
            spec = await interpreter.child(obj, ctx)
            self._check(spec, parent)
        except GitkrmError as e:
            if meta(obj).get("deletionTimestamp"):
                await self._finalize(child)
                return
            if child.error != e.message:
                log.error("source %s: %s: %s", parent.name, describe(ref), e.message)
            child.error = e.message
            return
        child.error = None
        child.read_versions = {k: v for k, v in ctx.seen.items() if k in _keys(spec.reads)}
        if meta(obj).get("deletionTimestamp"):
            child.spec = child.spec or spec
            await self._finalize(child)
            return
        if spec.unhonoured and (child.spec is None or child.spec.unhonoured != spec.unhonoured):
            for u in spec.unhonoured:
                log.warning("%s: %s not honoured: %s", describe(ref), u.field, u.reason)
        previous, child.spec = child.spec, spec
        if spec.refused:
            if previous is None or previous.refused != spec.refused:
                for r in spec.refused:
                    log.error("source %s: %s: %s: not synced", parent.name, describe(ref),
                              r.message)  # fmt: skip
            if child.runner is not None:
                log.info("child source %s stopped; its objects stay", child.name)
                await self._host.stop_child(child.name)
                child.runner = None
            child.finalizer = spec.finalizer
            return
        if spec.same_as_parent:
            if child.runner is not None:
                await self._host.stop_child(child.name)
                child.runner = None
            return
        if child.runner is None:
            child.runner = await self._host.start_child(
                spec.config, parent=parent.name, declared_by=ref
            )
            log.info(
                "source %s: %s declares child source %s (%s)",
                parent.name,
                describe(ref),
                child.name,
                spec.config.safe_url,
            )
        elif previous is None or previous.config != spec.config:
            await self._host.reconfigure_child(child.name, spec.config)
        if spec.finalizer and spec.finalizer not in (meta(obj).get("finalizers") or ()):
            written = await removal.add_finalizer(
                self._store, ref, spec.finalizer, on_write=self._wrote
            )
            if written is not None:
                child.obj = written
        child.finalizer = spec.finalizer

    def _check(self, spec: ChildSpec, parent: SourceRunner) -> None:
        """A cycle (the child is an ancestor's source again), or a name in use."""
        if spec.same_as_parent:
            return
        where = _where(spec.config)
        for name in self._lineage(parent.name):
            ancestor = self._host.runner(name)
            if ancestor is not None and _where(ancestor.config) == where:
                raise BadRequest(
                    f"a cycle of sources: it declares {spec.config.safe_url} path "
                    f"'{spec.config.path}', which source {name} (its ancestor) already syncs"
                )
        other = self._host.runner(spec.config.name)
        mine = self.children.get(_key(spec.declared_by))
        if other is not None and (mine is None or mine.runner is not other):
            raise BadRequest(f"source name {spec.config.name} is taken by another source")

    async def _earlier(
        self, parent: SourceRunner, interpreter: Interpreter, ref: ObjectRef
    ) -> None:
        child = Child(ref=ref, parent=parent.name, interpreter=interpreter, obj={})
        self.children[_key(ref)] = child
        try:
            child.obj = await self._store.get(ref)
        except NotFound:
            await self._host.stop_child(child.name)  # its GitSource object
            self.children.pop(_key(ref), None)
            return
        try:
            child.spec = await interpreter.child(
                child.obj, _Context(parent=parent.config, store=self._store)
            )
        except GitkrmError:
            child.spec = None
        child.finalizer = None if child.spec is None else child.spec.finalizer
        await self._undeclared(child)

    async def finalize_deleted(self, parent: SourceRunner) -> None:
        """Finalize the children of `parent` whose declaring object is being deleted, now:
        called before the parent's sync waits (a prune wave waits for its objects to be
        gone, and a declaring object with a finalizer goes only once the tree lifts it).
        Children of an earlier run (not known yet in this process) too."""
        known = [c for c in self.children.values() if c.parent == parent.name]
        for child in known:
            if child.deleting:
                continue
            obj = await self._deleted(child.ref)
            if obj is not None:
                child.obj = obj
                await self._finalize(child)
        try:
            remembered = await self._host.remembered(parent.name)
        except GitkrmError:
            return
        interpreters = registry.for_peers(parent.config.interpret)
        for ref in remembered.values():
            interpreter = interpreters.for_kind(ref.group_kind)
            if interpreter is None or _key(ref) in self.children:
                continue
            if await self._deleted(ref) is not None:
                await self._earlier(parent, interpreter, ref)

    async def _deleted(self, ref: ObjectRef) -> Obj | None:
        """The object when it is being deleted (and still held by a finalizer)."""
        try:
            obj = await self._store.get(ref)
        except GitkrmError:
            return None
        return obj if meta(obj).get("deletionTimestamp") else None

    async def _undeclared(self, child: Child) -> None:
        """The parent no longer applies the object: deleted (pruned), gone, or left."""
        try:
            obj = await self._store.get(child.ref)
        except NotFound:
            await self._forget(child, lifted=True)
            return
        child.obj = obj
        if meta(obj).get("deletionTimestamp"):
            await self._finalize(child)
        else:
            await self._forget(child, lifted=False)  # left in place (prune disabled)

    async def _forget(self, child: Child, *, lifted: bool) -> None:
        """Stop the child without pruning its objects; lift the finalizer unless gone."""
        for grandchild in await self._children_of(child):
            await self._forget(grandchild, lifted=False)
        if child.runner is not None:
            log.info("child source %s stopped; its objects stay", child.name)
        await self._host.stop_child(child.name)
        child.runner = None
        if not lifted and child.finalizer:
            await removal.remove_finalizer(
                self._store, child.ref, child.finalizer, on_write=self._wrote
            )
        self.children.pop(_key(child.ref), None)
        self._dirty.discard(_key(child.ref))

    async def _children_of(self, child: Child) -> list[Child]:
        """The child's own children: those running, and those an earlier run declared."""
        out = [c for c in self.children.values() if c.parent == child.name]
        try:
            remembered = await self._host.remembered(child.name)
        except GitkrmError:
            remembered = {}
        peers = frozenset() if child.spec is None else child.spec.config.interpret
        interpreters = registry.for_peers(peers)
        for ref in remembered.values():
            interpreter = interpreters.for_kind(ref.group_kind)
            if _key(ref) in self.children or interpreter is None:
                continue
            found = Child(ref=ref, parent=child.name, interpreter=interpreter, obj={})
            try:
                found.obj = await self._store.get(ref)
                parent = child.spec.config if child.spec is not None else None
                if parent is not None:
                    ctx = _Context(parent=parent, store=self._store)
                    found.spec = await interpreter.child(found.obj, ctx)
                    found.finalizer = found.spec.finalizer
            except GitkrmError:
                pass  # gone, or unreadable: its GitSource object still goes
            self.children[_key(ref)] = found
            out.append(found)
        return out

    async def _finalize(self, child: Child) -> None:
        """The declaring object is being deleted: stop the child, prune its objects (when
        it prunes), lift the finalizer. Grandchildren go first."""
        child.deleting = True
        for grandchild in await self._children_of(child):
            await self._finalize(grandchild)
        spec = child.spec
        hooked = spec is not None and not spec.same_as_parent
        revision = await self._host.last_revision(child.name) if hooked else None
        await self._host.stop_child(child.name)
        child.runner = None
        if spec is not None and hooked:
            from gitkrm.sync.hooks import Phase as HookPhase

            failed = await self._host.delete_hooks(
                child.name, spec.config, HookPhase.PRE_DELETE, revision=revision
            )
            if failed:
                child.error = f"a PreDelete hook failed: {failed[0]}"
                log.error("child source %s: %s (tried again at the next pass)", child.name,
                          child.error)  # fmt: skip
                return
        if spec is not None and not spec.same_as_parent and spec.config.prune:
            try:
                _, errors = await removal.prune_inventory(
                    self._store, source=child.name, agent_name=self._agent_name
                )
            except GitkrmError as e:
                errors = [e.message]
            if errors:
                child.error = f"not all objects pruned: {errors[0]}"
                log.error("child source %s: %s (retried at the next pass)", child.name, errors[0])
                return
        if spec is not None and hooked:
            from gitkrm.sync.hooks import Phase as HookPhase

            for failure in await self._host.delete_hooks(
                child.name, spec.config, HookPhase.POST_DELETE, revision=revision
            ):
                log.error("child source %s: %s", child.name, failure)
        finalizers = (
            [child.finalizer] if child.finalizer else [spec.finalizer] if spec and spec.finalizer
            else [GITKRM_FINALIZER]
        )  # fmt: skip
        for finalizer in finalizers:
            await removal.remove_finalizer(self._store, child.ref, finalizer, on_write=self._wrote)
        log.info("%s deleted: child source %s removed", describe(child.ref), child.name)
        self.children.pop(_key(child.ref), None)
        self._dirty.discard(_key(child.ref))

    # -- order -------------------------------------------------------------------------

    async def ready(self, name: str) -> bool:
        """Whether the child's dependencies are Ready (health-gated when they `wait`); a
        child that waits is shown Pending with what it waits for."""
        child = self.by_name(name)
        if child is None or child.spec is None:
            return True
        waiting: list[ObjectRef] = []
        for dep in child.spec.depends_on:
            other = self.children.get(_key(dep))
            runner = None
            if other is not None and other.error is None:
                runner = other.runner or (
                    self._host.runner(other.parent) if other.mirrors_parent else None
                )
            outcome = None if runner is None else runner.last_outcome
            if (
                runner is None
                or outcome is None
                or not outcome.succeeded
                or (
                    other is not None
                    and other.spec is not None
                    and other.spec.wait
                    and await self._host.healthy(runner) is not None
                )
            ):
                waiting.append(dep)
        child.waiting_for = tuple(waiting)
        child.pending = bool(waiting)
        self._dirty.add(_key(child.ref))
        if waiting:
            log.info(
                "child source %s waits for %s",
                child.name,
                ", ".join(describe(r) for r in waiting),
            )
        return not waiting

    def dependents(self, name: str) -> list[str]:
        """The pending children that wait for `name`'s declaring object."""
        child = self.by_name(name)
        if child is None:
            return []
        key = _key(child.ref)
        return [
            c.name
            for c in self.children.values()
            if c.pending and c.spec is not None and any(_key(d) == key for d in c.spec.depends_on)
        ]

    def after_sync(self, name: str) -> None:
        """A child synced: its status is due; the children waiting for it are asked."""
        child = self.by_name(name)
        if child is None:
            return
        self._dirty.add(_key(child.ref))
        for dependent in self.dependents(name):
            self._host.request_sync(dependent)

    # -- status ------------------------------------------------------------------------

    def state(self, child: Child) -> ChildState:
        runner = child.runner
        if child.mirrors_parent:
            runner = self._host.runner(child.parent)
        outcome = None if runner is None else runner.last_outcome
        verdicts = [] if runner is None else [h.status for h in runner.health.values()]
        health = aggregate(verdicts) if verdicts else None
        spec = child.spec
        if child.deleting:
            phase = Phase.DELETING
        elif child.error is not None:
            phase = Phase.FAILED  # its object can't be read: nothing syncs until it changes
        elif spec is not None and spec.refused:
            phase = Phase.REFUSED
        elif child.waiting_for:
            phase = Phase.PENDING
        elif runner is not None and runner.config.suspend:
            phase = Phase.SUSPENDED
        elif outcome is None:
            phase = Phase.SYNCING
        elif not outcome.succeeded:
            phase = Phase.FAILED
        elif spec is not None and spec.wait and health not in (None, Health.CURRENT):
            phase = Phase.SYNCING
        else:
            phase = Phase.SYNCED
        not_current = sum(1 for v in verdicts if v is not Health.CURRENT)
        last = None if runner is None else runner.source.last
        resolved = (
            last.ref
            if last is not None and outcome is not None and last.revision == outcome.revision
            else None
        )
        return ChildState(
            phase=phase,
            outcome=outcome,
            health=health,
            health_message=f"{not_current} object(s) not Current" if not_current else "",
            inventory=() if runner is None else runner.applied,
            object_health={} if runner is None else {r: h.status for r, h in runner.health.items()},
            waiting_for=child.waiting_for,
            unhonoured=() if spec is None else spec.unhonoured,
            error=child.error,
            observed_generation=int(meta(child.obj).get("generation") or 0) or None,
            resolved_ref=resolved,
            spec=spec,
            details=getattr(runner.source, "details", None) or {} if runner is not None else {},
        )

    def touch(self, name: str) -> None:
        """The child's state changed (health, a sync): its status is written at `flush`."""
        child = self.by_name(name)
        if child is not None:
            self._dirty.add(_key(child.ref))

    async def flush(self) -> None:
        """Write the status of every declaring object whose state changed: one batch,
        only the statuses that differ from what the object has."""
        dirty, self._dirty = self._dirty, set()
        ops: list[tuple[Child, Obj]] = []
        sources: list[SourceStatus] = []
        for key in dirty:
            child = self.children.get(key)
            if child is None:
                continue
            state = self.state(child)
            sources.extend(child.interpreter.source_statuses(child.obj, state))
            if state.phase is Phase.SYNCING and state.outcome is None and child.obj.get("status"):
                continue  # not synced yet in this term: its last status stands until it is
            status = child.interpreter.status(child.obj, state)
            if status != child.obj.get("status"):
                ops.append((child, {**child.obj, "status": status}))
        if sources:
            await sourcewrites.write(
                self._store, sources, write_status=self._write_status, wrote=self._wrote
            )
        if not ops:
            return
        try:
            written = await self._store.batch(
                [BatchOp(op=self._status_op(child.ref), obj=body) for child, body in ops]
            )
        except GitkrmError:
            for child, _ in ops:
                await self._write_one(child)
            return
        for (child, _), obj in zip(ops, written, strict=True):
            child.obj = obj
            self._wrote(obj)

    async def _write_one(self, child: Child) -> None:
        for _ in range(3):
            try:
                child.obj = await self._store.get(child.ref)
                status = child.interpreter.status(child.obj, self.state(child))
                if status == child.obj.get("status"):
                    return
                written = await self._write_status({**child.obj, "status": status}, child.ref)
            except Conflict:
                continue
            except GitkrmError as e:
                log.error("%s: status not written: %s", describe(child.ref), e.message)
                return
            child.obj = written
            self._wrote(written)
            return

    def _status_op(self, ref: ObjectRef) -> BatchOpKind:
        whole = (ref.group, ref.kind) in self._whole
        return BatchOpKind.UPDATE if whole else BatchOpKind.UPDATE_STATUS

    async def _write_status(self, body: Obj, ref: ObjectRef) -> Obj:
        """Through the status subresource, or with the object when its kind has none (the
        store says NotFound for the subresource of an object that exists)."""
        if (ref.group, ref.kind) in self._whole:
            return await self._store.update(body)
        try:
            return await self._store.update_status(body)
        except NotFound:
            written = await self._store.update(body)
            self._whole.add((ref.group, ref.kind))
            return written

    def _wrote(self, obj: Obj) -> None:
        rv = str(meta(obj).get("resourceVersion") or "")
        if rv.isdigit():
            self.written.add(int(rv))
