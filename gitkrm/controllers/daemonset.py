"""The DaemonSet controller: one pod per eligible node.

A node is eligible when it satisfies the template's nodeSelector and required node affinity
and its NoSchedule / NoExecute taints are tolerated (daemon pods tolerate the node
condition taints, as Kubernetes adds those tolerations). Each pod is pinned to its node by
required node affinity on `metadata.name`, and the scheduler binds it. RollingUpdate
replaces pods of an old revision up to maxUnavailable at a time (maxSurge creates the new
pod first); OnDelete leaves that to the user. Status carries the kstatus-relevant counts.
"""

from __future__ import annotations

import contextlib

from gitkrm.cache.informer import Key, key_of
from gitkrm.controllers.history import REVISION_HASH, ensure_revision
from gitkrm.controllers.kinds import CONTROLLER_REVISION, DAEMONSET, NODE, POD
from gitkrm.controllers.objects import (
    OWNER_INDEX,
    being_deleted,
    labels,
    pod_active,
    pod_phase,
    pod_ready,
    uid,
)
from gitkrm.controllers.pods import Availability, claim, pod_from_template
from gitkrm.controllers.rollout import scaled_value
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.selectors import node_affinity_matches, selector_of, tolerates
from gitkrm.controllers.writer import ref_of
from gitkrm.errors import NotFound
from gitkrm.krm import Obj
from gitkrm.store.protocol import Preconditions

DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def _target_node(pod: Obj) -> str | None:
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    terms = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}
    ).get("nodeSelectorTerms") or []
    for t in terms:
        for f in (t or {}).get("matchFields") or ():
            if f.get("key") == "metadata.name" and f.get("values"):
                return str(f["values"][0])
    return None


class DaemonSetController(Controller):
    name = "daemonset"
    component = "daemonset-controller"

    def setup(self) -> None:
        self.sets = self.watch(DAEMONSET, primary=True)
        self.pods = self.watch_owned(POD, "DaemonSet", claiming=True)
        self.nodes = self.watch(NODE)
        self.nodes.add_handler(self._on_node)
        self.revisions = self.watch_owned(CONTROLLER_REVISION)

    def _on_node(self, old: Obj | None, new: Obj | None) -> None:
        if (
            old is not None
            and new is not None
            and labels(old) == labels(new)
            and (old.get("spec") == new.get("spec"))
        ):
            return
        for ds in self.sets.items():
            self.queue.add(key_of(ds))

    def _eligible(self, ds: Obj, node: Obj) -> bool:
        pod_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
        if being_deleted(node) or not node_affinity_matches(pod_spec, node):
            return False
        tolerations = [*(pod_spec.get("tolerations") or []), *DAEMON_TOLERATIONS]
        for taint in (node.get("spec") or {}).get("taints") or ():
            blocking = isinstance(taint, dict) and taint.get("effect") in (
                "NoSchedule",
                "NoExecute",
            )
            if blocking and not tolerates(tolerations, taint):
                return False
        return True

    def _pod(self, ds: Obj, node: str, revision: str) -> Obj:
        spec = ds.get("spec") or {}
        pod = pod_from_template(
            ds,
            spec.get("template") or {},
            extra_labels={
                REVISION_HASH: revision,
                "pod-template-generation": str(ds["metadata"].get("generation") or 1),
            },
        )
        pod_spec = dict(pod["spec"])
        pod_spec["affinity"] = {
            **(pod_spec.get("affinity") or {}),
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                }
            },
        }
        have = pod_spec.get("tolerations") or []
        pod_spec["tolerations"] = [*have, *(t for t in DAEMON_TOLERATIONS if t not in have)]
        pod["spec"] = pod_spec
        return pod

    async def reconcile(self, key: Key) -> float | None:
        ds = self.sets.get_key(key)
        if ds is None:
            return None
        pods = await claim(self.writer, self.pods, ds, selector_of(ds))
        spec = ds.get("spec") or {}
        revision = await ensure_revision(
            self.writer, self.revisions, ds, spec.get("template") or {}
        )
        rev = revision["metadata"]["name"]
        nodes = {n["metadata"]["name"]: n for n in self.nodes.items()}
        eligible = {name for name, n in nodes.items() if self._eligible(ds, n)}
        by_node: dict[str, list[Obj]] = {}
        for p in pods:
            if pod_active(p) or pod_phase(p) == "Failed":
                target = _target_node(p)
                if target is not None:
                    by_node.setdefault(target, []).append(p)
        if not being_deleted(ds):
            await self._manage(ds, by_node, eligible, rev)
        pods = self.pods.by_index(OWNER_INDEX, uid(ds))
        return await self._status(ds, pods, eligible, rev)

    async def _delete(self, ds: Obj, pod: Obj) -> None:
        with contextlib.suppress(NotFound):
            await self.writer.delete(ref_of(pod), preconditions=Preconditions(uid=uid(pod)))
            self.events.normal(ds, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")

    async def _create(self, ds: Obj, node: str, rev: str) -> None:
        created = await self.writer.create(self._pod(ds, node, rev))
        self.events.normal(ds, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")

    async def _manage(
        self, ds: Obj, by_node: dict[str, list[Obj]], eligible: set[str], rev: str
    ) -> None:
        for node, node_pods in by_node.items():
            live = [p for p in node_pods if not being_deleted(p)]
            if node not in eligible:
                for p in live:
                    await self._delete(ds, p)
                continue
            for p in live:
                if pod_phase(p) == "Failed":
                    await self._delete(ds, p)
            live = [p for p in live if pod_phase(p) != "Failed"]
            for extra in sorted(
                live, key=lambda p: labels(p).get(REVISION_HASH) == rev, reverse=True
            )[1:]:
                await self._delete(ds, extra)
        for node in sorted(eligible):
            if not [
                p
                for p in by_node.get(node, ())
                if not being_deleted(p) and pod_phase(p) != "Failed"
            ]:
                await self._create(ds, node, rev)
        strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
        if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
            return
        rolling = strategy.get("rollingUpdate") or {}
        desired = len(eligible)
        budget = max(1, scaled_value(rolling.get("maxUnavailable", 1), desired, round_up=False))
        surge = scaled_value(rolling.get("maxSurge", 0), desired, round_up=True)
        unavailable = sum(
            1
            for n in eligible
            if not any(pod_ready(p) for p in by_node.get(n, ()) if not being_deleted(p))
        )
        for node in sorted(eligible):
            live = [p for p in by_node.get(node, ()) if not being_deleted(p)]
            old = [p for p in live if labels(p).get(REVISION_HASH) != rev]
            if not old:
                continue
            if surge > 0:
                new = [p for p in live if labels(p).get(REVISION_HASH) == rev]
                if not new:
                    await self._create(ds, node, rev)
                elif all(pod_ready(p) for p in new):
                    for p in old:
                        await self._delete(ds, p)
                continue
            if unavailable >= budget and all(pod_ready(p) for p in old):
                continue
            for p in old:
                await self._delete(ds, p)
            if all(pod_ready(p) for p in old):
                unavailable += 1

    async def _status(self, ds: Obj, pods: list[Obj], eligible: set[str], rev: str) -> float | None:
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        counts = Availability(min_ready, now=self.clock.time())
        scheduled: set[str] = set()
        misscheduled = updated = 0
        for p in pods:
            if not pod_active(p):
                continue
            node = _target_node(p)
            if node is None:
                continue
            if node not in eligible:
                misscheduled += 1
                continue
            scheduled.add(node)
            if labels(p).get(REVISION_HASH) == rev:
                updated += 1
            counts.add(p)
        desired = len(eligible)
        status: dict[str, object] = {
            "currentNumberScheduled": len(scheduled),
            "numberMisscheduled": misscheduled,
            "desiredNumberScheduled": desired,
            "numberReady": counts.ready,
            "observedGeneration": ds["metadata"].get("generation") or 1,
            "updatedNumberScheduled": updated,
            "numberAvailable": counts.available,
            "numberUnavailable": max(0, desired - counts.available),
        }
        status = {
            k: v
            for k, v in status.items()
            if v
            or k
            in (
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
            )
        }
        await self.writer.set_status(ds, status)
        return counts.again()
