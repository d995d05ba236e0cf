"""The garbage collector: ownerReferences drive cascading deletion.

- Background: once an owner is gone, each dependent whose owners are all gone is deleted
  (in turn, with its own dependents).
- Foreground: an owner deleted with propagationPolicy=Foreground carries the
  `foregroundDeletion` finalizer; its dependents are deleted first, and the finalizer is
  removed once no dependent with blockOwnerDeletion=true is left.
- Orphan: an owner carrying the `orphan` finalizer has its ownerReference removed from every
  dependent, then the finalizer is removed.

An owner is looked up in the informer cache by uid, and in the store when the cache does not
know it (it may be newer than the cache), as kube's GC does with a live lookup. A dependent
with some owners alive and some gone only loses the references to the gone ones.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping

from gitkrm.cache.informer import Key
from gitkrm.controllers.allkinds import Kind
from gitkrm.controllers.objects import being_deleted, owner_refs, uid
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.writer import ref_of
from gitkrm.errors import GitkrmError, NotFound
from gitkrm.krm import Obj, ObjectRef, split_api_version
from gitkrm.store.protocol import Preconditions, Propagation

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
OWNERS_INDEX = "owners"


def _owners_index(obj: Obj) -> list[str]:
    return [str(r.get("uid")) for r in owner_refs(obj) if r.get("uid")]


def _finalizers(obj: Obj) -> list[str]:
    found = obj["metadata"].get("finalizers")
    return [str(f) for f in found] if isinstance(found, list) else []


def _deleting_with(obj: Obj, finalizer: str) -> bool:
    return being_deleted(obj) and finalizer in _finalizers(obj)


def _item(kind: Kind, obj: Obj) -> Key:
    md = obj["metadata"]
    return (f"{kind.gvk.group}/{kind.gvk.kind}", f"{md.get('namespace') or ''}/{md['name']}")


class GarbageCollector(Controller):
    name = "garbagecollector"
    batch = 50

    def setup(self) -> None:
        self.kinds = self.ctx.all_kinds()
        self.kinds.add_index(OWNERS_INDEX, _owners_index)
        self._uids: dict[str, tuple[Kind, str, str]] = {}
        self.kinds.add_listener(self._track)
        self.kinds.add_handler(self._on_change)
        self.watched = self.kinds.informers_list()

    # -- the uid graph ---------------------------------------------------------------------

    def _track(self, kind: Kind, old: Obj | None, new: Obj | None) -> None:
        if new is not None:
            md = new["metadata"]
            self._uids[str(md.get("uid"))] = (kind, md.get("namespace") or "", md["name"])
        elif old is not None:
            self._uids.pop(uid(old), None)

    def _cached(self, owner_uid: str) -> Obj | None:
        found = self._uids.get(owner_uid)
        if found is None:
            return None
        kind, ns, name = found
        obj = kind.informer.get(ns, name)
        return obj if obj is not None and uid(obj) == owner_uid else None

    def dependents(self, owner_uid: str) -> list[tuple[Kind, Obj]]:
        out = []
        for kind in self.kinds.kinds():
            for obj in kind.informer.by_index(OWNERS_INDEX, owner_uid):
                out.append((kind, obj))
        return out

    # -- events ----------------------------------------------------------------------------

    def _on_change(self, kind: Kind, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            if old is None:
                return
            for dep_kind, dep in self.dependents(uid(old)):
                self.queue.add(_item(dep_kind, dep))
            for ref in owner_refs(old):
                owner = self._cached(str(ref.get("uid")))
                if owner is not None and being_deleted(owner):
                    self._enqueue_owner(owner)
            return
        fins = _finalizers(new)
        if being_deleted(new) and (FOREGROUND in fins or ORPHAN in fins):
            self.queue.add(_item(kind, new))
        refs = owner_refs(new)
        if not refs:
            return
        if old is not None and owner_refs(old) == refs and not being_deleted(new):
            return
        for ref in refs:
            owner = self._cached(str(ref.get("uid")))
            if owner is None or _deleting_with(owner, FOREGROUND):
                self.queue.add(_item(kind, new))
                return

    def _enqueue_owner(self, owner: Obj) -> None:
        found = self._uids.get(uid(owner))
        if found is not None:
            self.queue.add(_item(found[0], owner))

    # -- reconcile -------------------------------------------------------------------------

    async def reconcile(self, key: Key) -> float | None:
        group, _, kind_name = key[0].partition("/")
        ns, _, name = key[1].partition("/")
        kind = self.kinds.find(group, kind_name)
        if kind is None:
            return None
        obj = kind.informer.get(ns, name)
        if obj is None:
            return None
        if _deleting_with(obj, ORPHAN):
            await self._orphan_dependents(kind, obj)
            return None
        if _deleting_with(obj, FOREGROUND):
            await self._delete_dependents_first(kind, obj)
            return None
        if being_deleted(obj):
            return None
        await self._attempt_to_delete(kind, obj)
        return None

    async def _owner(self, ref: Mapping[str, object], ns: str) -> Obj | None:
        """The live owner a reference names, or None (gone, or replaced: another uid)."""
        ref_uid = str(ref.get("uid"))
        cached = self._cached(ref_uid)
        if cached is not None:
            return cached
        try:
            group, version = split_api_version(str(ref.get("apiVersion") or ""))
        except GitkrmError:
            return None
        kind = self.kinds.find(group, str(ref.get("kind")))
        namespaced = kind.namespaced if kind is not None else bool(ns)
        target = ObjectRef(
            group=group,
            kind=str(ref.get("kind")),
            name=str(ref.get("name")),
            namespace=ns if namespaced else None,
            version=kind.gvk.version if kind is not None else version,
        )
        try:
            live = await self.ctx.store.get(target)
        except NotFound:
            return None
        return live if uid(live) == ref_uid else None

    async def _attempt_to_delete(self, kind: Kind, obj: Obj) -> None:
        ns = obj["metadata"].get("namespace") or ""
        refs = owner_refs(obj)
        if not refs:
            return
        solid, dangling, waiting = [], [], []
        for ref in refs:
            owner = await self._owner(ref, ns)
            if owner is None:
                dangling.append(ref)
            elif _deleting_with(owner, FOREGROUND):
                waiting.append(ref)
            else:
                solid.append(ref)
        if solid:
            if dangling or waiting:
                await self._remove_refs(obj, [str(r.get("uid")) for r in (*dangling, *waiting)])
            return
        fins = _finalizers(obj)
        if waiting and self.dependents(uid(obj)):
            policy = Propagation.FOREGROUND
        elif ORPHAN in fins:
            policy = Propagation.ORPHAN
        elif FOREGROUND in fins:
            policy = Propagation.FOREGROUND
        else:
            policy = Propagation.BACKGROUND
        with contextlib.suppress(NotFound):
            await self.writer.delete(
                ref_of(obj), propagation=policy, preconditions=Preconditions(uid=uid(obj))
            )

    async def _remove_refs(self, obj: Obj, uids: Iterable[str]) -> None:
        patch = {
            "metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": u} for u in uids],
                "uid": uid(obj),
            }
        }
        with contextlib.suppress(NotFound):
            await self.writer.patch(ref_of(obj), patch, "strategic")

    async def _delete_dependents_first(self, kind: Kind, owner: Obj) -> None:
        owner_uid = uid(owner)
        blocking = 0
        for dep_kind, dep in self.dependents(owner_uid):
            ref = next((r for r in owner_refs(dep) if r.get("uid") == owner_uid), None)
            if ref is not None and ref.get("blockOwnerDeletion") is True:
                blocking += 1
            if not being_deleted(dep) or _deleting_with(dep, FOREGROUND):
                self.queue.add(_item(dep_kind, dep))
        if blocking == 0:
            await self._drop_finalizer(owner, FOREGROUND)

    async def _orphan_dependents(self, kind: Kind, owner: Obj) -> None:
        owner_uid = uid(owner)
        results = await asyncio.gather(
            *(self._remove_refs(dep, [owner_uid]) for _, dep in self.dependents(owner_uid)),
            return_exceptions=True,
        )
        for r in results:
            if isinstance(r, BaseException):
                raise r
        await self._drop_finalizer(owner, ORPHAN)

    async def _drop_finalizer(self, obj: Obj, finalizer: str) -> None:
        fins = [f for f in _finalizers(obj) if f != finalizer]
        new = dict(obj)
        new["metadata"] = {**obj["metadata"], "finalizers": fins}
        with contextlib.suppress(NotFound):
            await self.writer.update(new)
