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
workers; the tree decides which exist. The children themselves are `child.Child`; their
statuses are `childstatus`'s, the order they sync in `order`'s.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from gitkrm.errors import BadRequest, GitkrmError, ManifestError, NotFound
from gitkrm.krm import GVK, GroupKind, Obj, ObjectRef, ResourceKey
from gitkrm.store import Store
from gitkrm.store.protocol import meta
from gitkrm.sync import inventory, keys

from . import registry, removal
from .child import Child, Host, ReadContext, child_key, child_keys
from .childstatus import Statuses
from .gitsource import FINALIZER as GITKRM_FINALIZER
from .model import ChildSpec, Interpreter
from .naming import describe

if TYPE_CHECKING:
    from ..config import SourceConfig
    from ..runner import SourceRunner

log = logging.getLogger("gitkrm.agent")


def _where(config: SourceConfig) -> tuple[str, object, str, object]:
    """What a source syncs: repository, ref, path, and what it makes of them (an
    artifact of the repository, or an ArtifactGenerator's objects, is other content)."""
    path = "/".join(x for x in config.path.split("/") if x not in ("", "."))
    made = config.artifact or config.generator or config.oci
    return config.safe_url.rstrip("/").removesuffix(".git"), config.ref, path, made


class Tree:
    """See the module docstring."""

    def __init__(self, host: Host, *, store: Store, agent_name: str) -> None:
        self.host = host
        self._store = store
        self._agent_name = agent_name
        self.children: dict[ResourceKey, Child] = {}
        self.statuses = Statuses(host, store=store, children=self.children)
        """The declaring objects' statuses (`childstatus`)."""
        self._noted: set[tuple[str, GroupKind]] = set()  # inert kinds logged, per source

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
                inventory_id=keys.inventory_id(agent=self._agent_name, source=parent.name),
            )
        except GitkrmError as e:
            log.error("source %s: its children not read: %s", parent.name, e.message)
            return
        seen: set[ResourceKey] = set()
        inert = registry.inert(parent.config.interpret)
        for ref in inv.refs():
            interpreter = interpreters.for_kind(ref.group_kind)
            if interpreter is None:
                if ref.group_kind in inert:
                    self._note_inert(parent.name, ref, inert[ref.group_kind])
                continue
            try:
                obj = await self._store.get(ref)
            except NotFound:
                continue
            except GitkrmError as e:
                log.error("source %s: %s not read: %s", parent.name, describe(ref), e.message)
                continue
            seen.add(child_key(ref))
            await self._declared(parent, interpreter, obj)
        for child in [c for c in self.children.values() if c.parent == parent.name]:
            if child_key(child.ref) not in seen:
                await self._undeclared(child)
        try:
            remembered = await self.host.remembered(parent.name)
        except GitkrmError as e:
            log.debug("source %s: children of earlier runs not read: %s", parent.name, e.message)
            remembered = {}
        for ref in remembered.values():
            interpreter = interpreters.for_kind(ref.group_kind)
            if child_key(ref) in seen or child_key(ref) in self.children or interpreter is None:
                continue
            # Declared by an earlier run, no longer applied (deleted, or left in place).
            await self._earlier(parent, interpreter, ref)
        if parent.last_outcome is not None:
            for child in self.children.values():
                if child.parent == parent.name and child.mirrors_parent:
                    self.statuses.due(child_key(child.ref))
        await self._read_again()
        await self.statuses.flush()

    def _note_inert(self, parent: str, ref: ObjectRef, why: str) -> None:
        """Once per source and kind: an applied object of a peer's kind nothing acts on."""
        if (parent, ref.group_kind) not in self._noted:
            self._noted.add((parent, ref.group_kind))
            log.warning("source %s: %s is applied, not acted on: %s", parent, describe(ref), why)

    async def _read_again(self) -> None:
        """Children that could not be read because an object they name was not there (a
        GitRepository that a Kustomization they depend on applies, as Flux's layouts with
        a `sources` directory do) are read again after every pass, which may have made
        it: Flux retries them the same way."""
        for child in list(self.children.values()):
            if child.error is None or child.deleting or None not in child.read_versions.values():
                continue
            parent = self.host.runner(child.parent)
            if parent is None:
                continue
            try:
                obj = await self._store.get(child.ref)
            except GitkrmError:
                continue
            await self._declared(parent, child.interpreter, obj)

    async def _declared(self, parent: SourceRunner, interpreter: Interpreter, obj: Obj) -> None:
        ref = dataclasses.replace(ObjectRef.of(obj), version=None)
        key = ref.key
        child = self.children.get(key)
        if child is None:
            child = Child(ref=ref, parent=parent.name, interpreter=interpreter, obj=obj)
            self.children[key] = child
        child.obj = obj
        self.statuses.due(key)
        ctx = ReadContext(parent=parent.config, store=self._store)
        try:
            spec = await interpreter.child(obj, ctx)
            self._check(spec, parent)
        except GitkrmError as e:
            if meta(obj).get("deletionTimestamp"):
                await self._finalize(child)
                return
            # the object is named where the error is shown: not twice in one line
            own = isinstance(e, ManifestError) and e.object == describe(ref)
            text = e.detail if isinstance(e, ManifestError) and own else e.message
            if child.error != text:
                log.error("source %s: %s: %s", parent.name, describe(ref), text)
            child.error = text
            child.read_versions = dict(ctx.seen)  # a missing one: read again (`_read_again`)
            return
        earlier_error, child.error = child.error, None
        child.read_versions = {k: v for k, v in ctx.seen.items() if k in child_keys(spec.reads)}
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
                await self.host.stop_child(child.name)
                child.runner = None
            child.finalizer = spec.finalizer
            return
        if spec.same_as_parent:
            if child.runner is not None:
                await self.host.stop_child(child.name)
                child.runner = None
            return
        try:
            if child.runner is None:
                child.runner = await self.host.start_child(
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
                await self.host.reconfigure_child(child.name, spec.config)
        except GitkrmError as e:  # its GitSource refused: this child's error, not the tree's
            if earlier_error != e.message:
                log.error("source %s: %s: %s", parent.name, describe(ref), e.message)
            child.error, child.spec = e.message, previous
            return
        if spec.finalizer and spec.finalizer not in (meta(obj).get("finalizers") or ()):
            written = await removal.add_finalizer(
                self._store, ref, spec.finalizer, on_write=self.statuses.wrote
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
            ancestor = self.host.runner(name)
            if ancestor is not None and _where(ancestor.config) == where:
                raise BadRequest(
                    f"a cycle of sources: it declares {spec.config.safe_url} path "
                    f"'{spec.config.path}', which source {name} (its ancestor) already syncs"
                )
        other = self.host.runner(spec.config.name)
        mine = self.children.get(child_key(spec.declared_by))
        if other is not None and (mine is None or mine.runner is not other):
            raise BadRequest(f"source name {spec.config.name} is taken by another source")

    async def _earlier(
        self, parent: SourceRunner, interpreter: Interpreter, ref: ObjectRef
    ) -> None:
        child = Child(ref=ref, parent=parent.name, interpreter=interpreter, obj={})
        self.children[child_key(ref)] = child
        try:
            child.obj = await self._store.get(ref)
        except NotFound:
            await self.host.stop_child(child.name)  # its GitSource object
            self.children.pop(child_key(ref), None)
            return
        try:
            child.spec = await interpreter.child(
                child.obj, ReadContext(parent=parent.config, store=self._store)
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
            remembered = await self.host.remembered(parent.name)
        except GitkrmError:
            return
        interpreters = registry.for_peers(parent.config.interpret)
        for ref in remembered.values():
            interpreter = interpreters.for_kind(ref.group_kind)
            if interpreter is None or child_key(ref) in self.children:
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
        await self.host.stop_child(child.name)
        child.runner = None
        if not lifted and child.finalizer:
            await removal.remove_finalizer(
                self._store, child.ref, child.finalizer, on_write=self.statuses.wrote
            )
        self.children.pop(child_key(child.ref), None)
        self.statuses.drop(child_key(child.ref))

    async def _children_of(self, child: Child) -> list[Child]:
        """The child's own children: those running, and those an earlier run declared."""
        out = [c for c in self.children.values() if c.parent == child.name]
        try:
            remembered = await self.host.remembered(child.name)
        except GitkrmError:
            remembered = {}
        peers = frozenset() if child.spec is None else child.spec.config.interpret
        interpreters = registry.for_peers(peers)
        for ref in remembered.values():
            interpreter = interpreters.for_kind(ref.group_kind)
            if child_key(ref) in self.children or interpreter is None:
                continue
            found = Child(ref=ref, parent=child.name, interpreter=interpreter, obj={})
            try:
                found.obj = await self._store.get(ref)
                parent = child.spec.config if child.spec is not None else None
                if parent is not None:
                    ctx = ReadContext(parent=parent, store=self._store)
                    found.spec = await interpreter.child(found.obj, ctx)
                    found.finalizer = found.spec.finalizer
            except GitkrmError:
                pass  # gone, or unreadable: its GitSource object still goes
            self.children[child_key(ref)] = found
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
        revision = await self.host.last_revision(child.name) if hooked else None
        await self.host.stop_child(child.name)
        child.runner = None
        if spec is not None and hooked:
            from gitkrm.sync.hooks import Phase as HookPhase

            failed = await self.host.delete_hooks(
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

            for failure in await self.host.delete_hooks(
                child.name, spec.config, HookPhase.POST_DELETE, revision=revision
            ):
                log.error("child source %s: %s", child.name, failure)
        finalizers = (
            [child.finalizer] if child.finalizer else [spec.finalizer] if spec and spec.finalizer
            else [GITKRM_FINALIZER]
        )  # fmt: skip
        for finalizer in finalizers:
            await removal.remove_finalizer(
                self._store, child.ref, finalizer, on_write=self.statuses.wrote
            )
        log.info("%s deleted: child source %s removed", describe(child.ref), child.name)
        self.children.pop(child_key(child.ref), None)
        self.statuses.drop(child_key(child.ref))
