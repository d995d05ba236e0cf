"""Service accounts: every namespace has a `default` ServiceAccount, as kube-controller-
manager's serviceaccount controller makes it: created with the namespace, created again
when deleted, never in a namespace being deleted. (No token: service account tokens are
not served.)"""

from __future__ import annotations

from gitkrm.controllers.kinds import SERVICE_ACCOUNT
from gitkrm.controllers.pernamespace import PerNamespaceController
from gitkrm.krm import Obj

DEFAULT = "default"


class ServiceAccountController(PerNamespaceController):
    name = "serviceaccount"
    kind = SERVICE_ACCOUNT
    object_name = DEFAULT

    def desired(self, namespace: str) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT, "namespace": namespace},
        }
