"""Service accounts: every namespace has a `default` ServiceAccount, as kube-controller-
manager's serviceaccount controller makes it: created with the namespace, created again
when deleted, never in a namespace being deleted. (No token: service account tokens are
not served.)"""

from __future__ import annotations

import contextlib

from gitkrm.cache.informer import Key
from gitkrm.controllers.kinds import NAMESPACE, SERVICE_ACCOUNT
from gitkrm.controllers.objects import being_deleted
from gitkrm.controllers.runtime import Controller
from gitkrm.errors import AlreadyExists, NotFound
from gitkrm.krm import Obj

DEFAULT = "default"


class ServiceAccountController(Controller):
    name = "serviceaccount"

    def setup(self) -> None:
        self.namespaces = self.watch(NAMESPACE, primary=True)
        self.accounts = self.watch(SERVICE_ACCOUNT)
        self.accounts.add_handler(self._on_account)

    def _on_account(self, old: Obj | None, new: Obj | None) -> None:
        if new is None and old is not None and old["metadata"]["name"] == DEFAULT:
            self.queue.add(("", old["metadata"].get("namespace") or ""))

    async def reconcile(self, key: Key) -> float | None:
        ns = self.namespaces.get_key(key)
        if (
            ns is None
            or being_deleted(ns)
            or (ns.get("status") or {}).get("phase") == "Terminating"
        ):
            return None
        name = key[1]
        if self.accounts.get(name, DEFAULT) is not None:
            return None
        account = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT, "namespace": name},
        }
        # AlreadyExists: made meanwhile; NotFound: the namespace went away.
        with contextlib.suppress(AlreadyExists, NotFound):
            await self.writer.create(account)
        return None
