"""The resource-quota controller (kube-controller-manager's): a ResourceQuota's
`status.hard` is its `spec.hard` and its `status.used` what the namespace's objects use
of it (gitkrm.schema.quota), counted again when the quota changes, when an object it
counts comes, goes or changes what it uses (a pod turning Succeeded or Failed stops
counting), and on every resync. The admission in the store charges creates in between, as
kube-apiserver's quota plugin does.

Only namespaces that hold a quota cost anything: events elsewhere stop at a dict lookup.
A quota is read from the store before the objects it counts, so a create charged meanwhile
makes the status write conflict (and the count run again) instead of being lost.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitkrm.cache.informer import Key
from gitkrm.controllers.kinds import (
    CONFIG_MAP,
    CRONJOB,
    DAEMONSET,
    DEPLOYMENT,
    JOB,
    POD,
    PVC,
    REPLICASET,
    REPLICATION_CONTROLLER,
    RESOURCE_QUOTA,
    SECRET,
    SERVICE,
    STATEFULSET,
)
from gitkrm.controllers.runtime import Controller
from gitkrm.errors import NotFound
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.schema import quota

# Kinds whose changes recount the quotas of their namespace; another kind a quota counts
# (`count/ingresses.networking.k8s.io`) is watched from the first count of such a quota.
TRACKED = (
    POD,
    SERVICE,
    PVC,
    CONFIG_MAP,
    SECRET,
    REPLICATION_CONTROLLER,
    DEPLOYMENT,
    REPLICASET,
    STATEFULSET,
    DAEMONSET,
    JOB,
    CRONJOB,
)


def _uses_changed(old: Obj, new: Obj) -> bool:
    """Whether an update may change what the object uses (its spec, phase or deletion)."""
    return (
        old.get("spec") != new.get("spec")
        or (old.get("status") or {}).get("phase") != (new.get("status") or {}).get("phase")
        or old["metadata"].get("deletionTimestamp") != new["metadata"].get("deletionTimestamp")
    )


class ResourceQuotaController(Controller):
    name = "resourcequota"

    def setup(self) -> None:
        self.quotas = self.watch(RESOURCE_QUOTA, primary=True)
        self.quotas.add_handler(self._on_quota)
        self._namespaces: dict[str, int] = {}  # namespace -> quotas in it
        self._followed: set[tuple[str, str]] = set()  # (group, kind) recounting on change
        for gvk in TRACKED:
            self._follow(gvk)

    def _follow(self, gvk: GVK) -> None:
        if (gvk.group, gvk.kind) not in self._followed:
            self._followed.add((gvk.group, gvk.kind))
            self.watch(gvk).add_handler(self._on_member)

    def _on_quota(self, old: Obj | None, new: Obj | None) -> None:
        if (old is None) == (new is None):
            return
        obj = new if new is not None else old
        assert obj is not None
        ns = obj["metadata"].get("namespace") or ""
        count = self._namespaces.get(ns, 0) + (1 if new is not None else -1)
        if count > 0:
            self._namespaces[ns] = count
        else:
            self._namespaces.pop(ns, None)

    def _on_member(self, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        if obj is None:
            return
        ns = obj["metadata"].get("namespace") or ""
        if ns not in self._namespaces:
            return
        if old is not None and new is not None and not _uses_changed(old, new):
            return
        for q in self.quotas.objects(ns):
            self.queue.add((ns, q["metadata"]["name"]))

    async def reconcile(self, key: Key) -> float | None:
        ns, name = key
        try:
            live = await self.ctx.store.get(
                ObjectRef(group="", kind="ResourceQuota", namespace=ns, name=name)
            )
        except NotFound:
            return None
        hard = quota.hard_of(live)
        kinds, counted = quota.subjects_of(hard)
        members: dict[quota.Subject, Iterable[Obj]] = {}
        for gvk, subject in self._subjects(kinds, counted):
            self._follow(gvk)
            members[subject] = (await self.ctx.store.list(gvk, namespace=ns))["items"]
        status: dict[str, object] = {"hard": hard, "used": quota.used_of(live, members)}
        await self.writer.set_status(live, status)
        return None

    def _subjects(
        self, kinds: set[tuple[str, str]], counted: set[str]
    ) -> list[tuple[GVK, quota.Subject]]:
        """The kinds to count with their served version: the evaluators' kinds and those
        `count/<resource>.<group>` names (unknown ones are left out: nothing to count)."""
        out: list[tuple[GVK, quota.Subject]] = []
        for info in self.ctx.registry.infos():
            dotted = f"{info.plural}.{info.group}" if info.group else info.plural
            if (info.group, info.kind) in kinds or dotted in counted:
                subject = quota.Subject(info.group, info.kind, info.plural)
                if all(s != subject for _, s in out):
                    out.append(
                        (GVK(group=info.group, version=info.version, kind=info.kind), subject)
                    )
        return out
