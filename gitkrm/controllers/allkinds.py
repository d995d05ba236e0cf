"""Informers for every kind the store serves, custom resources included: what the garbage
collector and the namespace controller need (they act on objects of any kind).

Built-in kinds come from the registry at start; a custom kind gets its informer when its
CustomResourceDefinition appears (and keeps it: a CRD deleted and created again resumes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gitkrm.cache.informer import IndexFn, Informer
from gitkrm.cache.watchcache import Holder
from gitkrm.controllers.kinds import CRD
from gitkrm.errors import NotFound
from gitkrm.krm import GVK, GroupKind, Obj
from gitkrm.schema import Registry, ResourceInfo

KindHandler = Callable[["Kind", Obj | None, Obj | None], None]

# Kinds nothing owns and that change too often to be worth following.
_SKIPPED = frozenset({("", "Event"), ("events.k8s.io", "Event")})


@dataclass(frozen=True, slots=True)
class Kind:
    gvk: GVK
    namespaced: bool
    informer: Informer

    @property
    def group_kind(self) -> tuple[str, str]:
        return (self.gvk.group, self.gvk.kind)


class AllKinds:
    def __init__(self, informers: Holder, registry: Registry) -> None:
        self.informers = informers
        self.registry = registry
        self._kinds: dict[tuple[str, str], Kind] = {}
        self._handlers: list[KindHandler] = []
        self._indexes: dict[str, IndexFn] = {}
        self._listeners: list[KindHandler] = []
        self._started = False

    def start(self) -> None:
        """Create the informers of the served kinds (once)."""
        if self._started:
            return
        self._started = True
        seen: set[tuple[str, str]] = set()
        for info in self.registry.infos():
            key = (info.group, info.kind)
            if key in seen or key in _SKIPPED:
                continue
            seen.add(key)
            if "list" not in info.verbs or "watch" not in info.verbs:
                continue
            preferred = self.registry.versions_of(GroupKind(group=info.group, kind=info.kind))
            self._add(preferred[0] if preferred else info)
        crds = self.informers.get(CRD)
        crds.add_handler(self._on_crd)

    def _add(self, info: ResourceInfo) -> Kind:
        key = (info.group, info.kind)
        found = self._kinds.get(key)
        if found is not None:
            return found
        inf = self.informers.get(info.gvk)
        kind = Kind(gvk=info.gvk, namespaced=info.namespaced, informer=inf)
        self._kinds[key] = kind
        for name, fn in self._indexes.items():
            inf.add_index(name, fn)
        for h in self._handlers:
            inf.add_handler(_bind(h, kind))
        for lst in self._listeners:
            inf.add_listener(_bind(lst, kind))
        return kind

    def _on_crd(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            return
        spec = new.get("spec") or {}
        group = str(spec.get("group") or "")
        kind = str((spec.get("names") or {}).get("kind") or "")
        if not kind or (group, kind) in self._kinds:
            return
        try:
            infos = self.registry.versions_of(GroupKind(group=group, kind=kind))
        except NotFound:
            return
        if infos:
            self._add(infos[0])

    # -- registration --------------------------------------------------------------------

    def add_handler(self, handler: KindHandler) -> None:
        self._handlers.append(handler)
        for kind in list(self._kinds.values()):
            kind.informer.add_handler(_bind(handler, kind))

    def add_listener(self, listener: KindHandler) -> None:
        self._listeners.append(listener)
        for kind in list(self._kinds.values()):
            kind.informer.add_listener(_bind(listener, kind))

    def add_index(self, name: str, fn: IndexFn) -> None:
        self._indexes[name] = fn
        for kind in self._kinds.values():
            kind.informer.add_index(name, fn)

    # -- reads -----------------------------------------------------------------------------

    def kinds(self) -> list[Kind]:
        return list(self._kinds.values())

    def find(self, group: str, kind: str) -> Kind | None:
        return self._kinds.get((group, kind))

    def informers_list(self) -> list[Informer]:
        return [k.informer for k in self._kinds.values()]


def _bind(handler: KindHandler, kind: Kind) -> Callable[[Obj | None, Obj | None], None]:
    def bound(old: Obj | None, new: Obj | None) -> None:
        handler(kind, old, new)

    return bound
