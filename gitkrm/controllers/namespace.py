"""The namespace controller: a deleted namespace is emptied, then finalized.

A namespace being deleted (phase Terminating) has every object in it deleted; objects held
by finalizers are waited for (their deletion events wake the controller). Its status shows
the NamespaceContentRemaining and NamespaceFinalizersRemaining conditions meanwhile. Once
nothing is left, the `kubernetes` finalizer is removed through the namespace's `finalize`
subresource and the store removes the namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol, runtime_checkable

from gitkrm.cache.informer import Key
from gitkrm.controllers.allkinds import Kind
from gitkrm.controllers.kinds import NAMESPACE
from gitkrm.controllers.objects import being_deleted, with_status
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.writer import ref_of
from gitkrm.errors import BadRequest, NotFound
from gitkrm.krm import Obj
from gitkrm.krm.conditions import conditions_of, set_condition
from gitkrm.store.protocol import Propagation

FINALIZER = "kubernetes"
# A safety net: look again this often while content held by finalizers remains.
RECHECK = 15.0


@runtime_checkable
class NamespaceFinalizing(Protocol):
    """The store's `namespaces/<name>/finalize` subresource."""

    async def finalize_namespace(
        self, obj: Obj, *, dry_run: bool = False, field_manager: str | None = None
    ) -> Obj: ...


class NamespaceController(Controller):
    name = "namespace"
    workers = 2

    def setup(self) -> None:
        self.namespaces = self.watch(NAMESPACE, primary=True)
        self.kinds = self.ctx.all_kinds()
        self.kinds.add_handler(self._on_content)
        self.watched = [*self.watched, *self.kinds.informers_list()]

    def _on_content(self, kind: Kind, old: Obj | None, new: Obj | None) -> None:
        if new is not None or old is None or not kind.namespaced:
            return
        ns = old["metadata"].get("namespace") or ""
        owner = self.namespaces.get(None, ns)
        if owner is not None and being_deleted(owner):
            self.queue.add(("", ns))

    async def reconcile(self, key: Key) -> float | None:
        ns = self.namespaces.get_key(key)
        if ns is None or not being_deleted(ns):
            return None
        name = key[1]
        remaining: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        deletes = []
        for kind in self.kinds.kinds():
            if not kind.namespaced:
                continue
            objs = kind.informer.objects(name)
            if not objs:
                continue
            resource = f"{kind.gvk.kind.lower()}s.{kind.gvk.group}"
            remaining[resource] = len(objs)
            for obj in objs:
                for f in obj["metadata"].get("finalizers") or ():
                    finalizers[str(f)] = finalizers.get(str(f), 0) + 1
                if not being_deleted(obj):
                    deletes.append(
                        self.writer.delete(ref_of(obj), propagation=Propagation.BACKGROUND)
                    )
        results = await asyncio.gather(*deletes, return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, NotFound):
                raise r
        if deletes:
            return RECHECK
        if remaining:
            await self._report(ns, remaining, finalizers)
            return RECHECK
        if await self._content_left(name):
            return 1.0
        await self._finalize(ns)
        return None

    async def _content_left(self, name: str) -> bool:
        """The caches say it is empty: ask the store to be sure before finalizing."""
        for kind in self.kinds.kinds():
            if not kind.namespaced:
                continue
            try:
                listed = await self.ctx.store.list(kind.gvk, namespace=name, limit=1)
            except (NotFound, BadRequest):
                continue
            if listed.get("items"):
                return True
        return False

    async def _report(self, ns: Obj, remaining: dict[str, int], finalizers: dict[str, int]) -> None:
        conds = conditions_of(ns)
        content = ", ".join(f"{r} has {n} resource instances" for r, n in sorted(remaining.items()))
        conds = set_condition(
            conds,
            "NamespaceContentRemaining",
            "True",
            "SomeResourcesRemain",
            f"Some resources are remaining: {content}",
            clock=self.clock,
        )
        if finalizers:
            held = ", ".join(
                f"{f} in {n} resource instances" for f, n in sorted(finalizers.items())
            )
            conds = set_condition(
                conds,
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizersRemain",
                f"Some content in the namespace has finalizers remaining: {held}",
                clock=self.clock,
            )
        else:
            conds = set_condition(
                conds,
                "NamespaceFinalizersRemaining",
                "False",
                "ContentHasNoFinalizers",
                "All content-preserving finalizers finished",
                clock=self.clock,
            )
        if conds != conditions_of(ns):
            status = dict(ns.get("status") or {})
            status["conditions"] = conds
            with contextlib.suppress(NotFound):
                await self.writer.update_status(with_status(ns, status))

    async def _finalize(self, ns: Obj) -> None:
        store = self.ctx.store
        if not isinstance(store, NamespaceFinalizing):
            raise BadRequest("the store has no namespace finalize subresource")
        spec = dict(ns.get("spec") or {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or () if f != FINALIZER]
        with contextlib.suppress(NotFound):
            await self.writer.finalize_namespace(store, {**ns, "spec": spec})
