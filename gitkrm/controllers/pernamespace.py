"""One object of a kind in every namespace, as kube-controller-manager keeps them (the
`default` ServiceAccount, the `kube-root-ca.crt` ConfigMap): created with the namespace,
created again when deleted, put back when changed where the controller says so, never
made in a namespace being deleted."""

from __future__ import annotations

import contextlib
from typing import ClassVar

from gitkrm.cache.informer import Key
from gitkrm.controllers.kinds import NAMESPACE
from gitkrm.controllers.objects import being_deleted
from gitkrm.controllers.runtime import Controller
from gitkrm.errors import AlreadyExists, Conflict, NotFound
from gitkrm.krm import GVK, Obj


class PerNamespaceController(Controller):
    """Keeps `object_name` of `kind` in every namespace (keys are namespaces)."""

    kind: ClassVar[GVK]
    object_name: ClassVar[str]

    def setup(self) -> None:
        self.namespaces = self.watch(NAMESPACE, primary=True)
        self.objects = self.watch(self.kind)
        self.objects.add_handler(self._on_object)

    def desired(self, namespace: str) -> Obj:
        """The object to create in `namespace`."""
        raise NotImplementedError

    def restored(self, live: Obj) -> Obj | None:
        """The live object put back as it should be, or None to leave it (the default)."""
        return None

    def _on_object(self, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        if (
            obj is not None
            and obj["metadata"]["name"] == self.object_name
            and (new is None or self.restored(new) is not None)
        ):
            self.queue.add(("", obj["metadata"].get("namespace") or ""))

    async def reconcile(self, key: Key) -> float | None:
        ns = self.namespaces.get_key(key)
        if (
            ns is None
            or being_deleted(ns)
            or (ns.get("status") or {}).get("phase") == "Terminating"
        ):
            return None
        name = key[1]
        live = self.objects.get(name, self.object_name)
        # AlreadyExists: made meanwhile; NotFound: the namespace (or object) went away;
        # Conflict: changed meanwhile (its event queues the namespace again).
        with contextlib.suppress(AlreadyExists, NotFound, Conflict):
            if live is None:
                await self.writer.create(self.desired(name))
            elif (fixed := self.restored(live)) is not None:
                await self.writer.update(fixed)
        return None
