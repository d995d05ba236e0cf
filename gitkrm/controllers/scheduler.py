"""The scheduler: binds pending pods to nodes.

A node fits when it is Ready and schedulable (or the pod tolerates that), its labels satisfy
the pod's nodeSelector and required node affinity, the pod tolerates its NoSchedule and
NoExecute taints, and its allocatable capacity minus what bound pods request covers the
pod's requests. Among fitting nodes the least allocated wins. A pod that fits nowhere gets
PodScheduled=False, reason Unschedulable, with kube-scheduler's message, and is tried again
when nodes, pods or claims change. Decisions are recorded ("assumed") before the bind is
written, so concurrent decisions never overcommit a node. Pods marked
`gitkrm.io/simulate: pending` are never scheduled.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitkrm.cache.informer import Key, key_of
from gitkrm.controllers.kinds import NODE, POD, PVC, SIMULATE
from gitkrm.controllers.objects import (
    annotations_of,
    being_deleted,
    labels,
    pod_terminal,
    uid,
    with_status,
)
from gitkrm.controllers.resources import Resources, add, insufficient, parse_list, pod_requests
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.selectors import node_affinity_matches, tolerates
from gitkrm.krm import Obj
from gitkrm.krm.conditions import conditions_of, get_condition, set_condition
from gitkrm.store.events import Style

DEFAULT_SCHEDULER = "default-scheduler"
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def _pending(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    if spec.get("nodeName") or pod_terminal(pod) or being_deleted(pod):
        return False
    return spec.get("schedulerName") in (None, "", DEFAULT_SCHEDULER)


def _counts(pod: Obj) -> bool:
    """Whether a pod holds resources on its node."""
    return bool((pod.get("spec") or {}).get("nodeName")) and not pod_terminal(pod)


def _taint_text(taint: Mapping[str, object]) -> str:
    return f"{{{taint.get('key')}: {taint.get('value') or ''}}}"


class Scheduler(Controller):
    name = "scheduler"
    component = "default-scheduler"
    event_style = Style.SERIES  # kube-scheduler records through events.k8s.io
    workers = 1
    batch = 500  # one worker decides many pods at once; their binds share a commit

    def setup(self) -> None:
        self.pods = self.watch(POD)
        self.nodes = self.watch(NODE)
        self.claims = self.watch(PVC)
        self.pods.add_handler(self._on_pod)
        self.pods.add_listener(self._account)
        self.nodes.add_handler(self._on_node)
        self.claims.add_handler(self._on_claim)
        self._used: dict[str, Resources] = {}
        self._assumed: dict[Key, tuple[str, Resources]] = {}
        self._assumed_used: dict[str, Resources] = {}
        self._requests: dict[str, Resources] = {}
        self._unschedulable: set[Key] = set()

    # -- bookkeeping -----------------------------------------------------------------------

    def requests(self, pod: Obj) -> Resources:
        pod_uid = uid(pod)
        req = self._requests.get(pod_uid)
        if req is None:
            req = self._requests[pod_uid] = pod_requests(pod)
        return req

    def _account(self, old: Obj | None, new: Obj | None) -> None:
        if old is not None and _counts(old):
            add(self._used.setdefault(old["spec"]["nodeName"], {}), self.requests(old), -1)
        if new is not None:
            if _counts(new):
                add(self._used.setdefault(new["spec"]["nodeName"], {}), self.requests(new))
            if new["spec"].get("nodeName"):
                self._forget(key_of(new))
        elif old is not None:
            self._forget(key_of(old))
            self._requests.pop(uid(old), None)

    def _assume(self, key: Key, node: str, req: Resources) -> None:
        self._assumed[key] = (node, req)
        add(self._assumed_used.setdefault(node, {}), req)

    def _forget(self, key: Key) -> None:
        found = self._assumed.pop(key, None)
        if found is not None:
            add(self._assumed_used.setdefault(found[0], {}), found[1], -1)

    def _usage(self, node: str) -> Resources:
        used = dict(self._used.get(node) or {})
        add(used, self._assumed_used.get(node) or {})
        return used

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            if old is not None:
                self._unschedulable.discard(key_of(old))
                if _counts(old):
                    self._retry()
            return
        if _pending(new):
            self.queue.add(key_of(new))
        elif old is not None and _counts(old) and not _counts(new):
            self._retry()

    def _on_node(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            return
        if (
            old is None
            or any(old.get(k) != new.get(k) for k in ("spec",))
            or labels(old) != labels(new)
            or (old.get("status") or {}).get("allocatable")
            != (new.get("status") or {}).get("allocatable")
            or get_condition(old, "Ready") != get_condition(new, "Ready")
        ):
            self._retry()

    def _on_claim(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None and (new.get("status") or {}).get("phase") == "Bound":
            self._retry()

    def _retry(self) -> None:
        for key in self._unschedulable:
            self.queue.add(key)

    # -- deciding --------------------------------------------------------------------------

    def _unfit(self, pod: Obj, node: Obj, req: Resources) -> list[str]:
        """Why `pod` does not fit on `node` (empty: it fits)."""
        spec = pod.get("spec") or {}
        tolerations = spec.get("tolerations") or []
        nspec = node.get("spec") or {}
        if being_deleted(node):
            return ["node(s) were being deleted"]
        if nspec.get("unschedulable") and not tolerates(tolerations, UNSCHEDULABLE_TAINT):
            return ["node(s) were unschedulable"]
        ready = get_condition(node, "Ready")
        if (ready is None or ready.get("status") != "True") and not tolerates(
            tolerations, NOT_READY_TAINT
        ):
            return ["node(s) had untolerated taint {node.kubernetes.io/not-ready: }"]
        if not node_affinity_matches(spec, node):
            return ["node(s) didn't match Pod's node affinity/selector"]
        for taint in nspec.get("taints") or ():
            if not isinstance(taint, dict) or taint.get("effect") not in (
                "NoSchedule",
                "NoExecute",
            ):
                continue
            if not tolerates(tolerations, taint):
                return [f"node(s) had untolerated taint {_taint_text(taint)}"]
        allocatable = parse_list((node.get("status") or {}).get("allocatable"))
        if not allocatable:
            return ["node(s) had no allocatable resources reported yet"]
        used = self._usage(node["metadata"]["name"])
        short = insufficient(allocatable, used, req)
        return ["Too many pods" if r == "pods" else f"Insufficient {r}" for r in short]

    def _score(self, node: Obj, req: Resources) -> float:
        allocatable = parse_list((node.get("status") or {}).get("allocatable"))
        used = self._usage(node["metadata"]["name"])
        parts = []
        for r in ("cpu", "memory"):
            cap = allocatable.get(r, 0)
            if cap > 0:
                parts.append((used.get(r, 0) + req.get(r, 0)) / cap)
        pods_cap = allocatable.get("pods", 0)
        if pods_cap > 0:
            parts.append((used.get("pods", 0) + 1) / pods_cap)
        return sum(parts) / len(parts) if parts else 0.0

    def _volumes(self, pod: Obj) -> str | None:
        ns = pod["metadata"].get("namespace") or ""
        for vol in (pod.get("spec") or {}).get("volumes") or ():
            claim = (vol or {}).get("persistentVolumeClaim") if isinstance(vol, dict) else None
            if not isinstance(claim, dict):
                continue
            name = claim.get("claimName")
            pvc = self.claims.get(ns, str(name))
            if pvc is None:
                return f'persistentvolumeclaim "{name}" not found'
            if being_deleted(pvc):
                return f'persistentvolumeclaim "{name}" is being deleted'
            if (pvc.get("status") or {}).get("phase") != "Bound":
                return "pod has unbound immediate PersistentVolumeClaims"
        return None

    async def reconcile(self, key: Key) -> float | None:
        pod = self.pods.get_key(key)
        if pod is None or not _pending(pod):
            self._unschedulable.discard(key)
            return None
        if key in self._assumed:
            return None
        nodes = self.nodes.items()
        total = len(nodes)
        if annotations_of(pod).get(SIMULATE) == "pending":
            await self._unschedulable_now(
                pod, key, f"0/{total} nodes are available: pod is marked {SIMULATE}: pending."
            )
            return None
        problem = self._volumes(pod)
        if problem is not None:
            await self._unschedulable_now(
                pod, key, f"0/{total} nodes are available: {problem}. preemption: not eligible."
            )
            return None
        req = self.requests(pod)
        best: Obj | None = None
        best_score = 0.0
        reasons: dict[str, int] = {}
        for node in nodes:
            why = self._unfit(pod, node, req)
            if why:
                for r in why:
                    reasons[r] = reasons.get(r, 0) + 1
                continue
            score = self._score(node, req)
            if (
                best is None
                or score < best_score
                or (score == best_score and node["metadata"]["name"] < best["metadata"]["name"])
            ):
                best, best_score = node, score
        if best is None:
            detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
            message = (
                f"0/{total} nodes are available: {detail}."
                if detail
                else ("0/0 nodes are available: no nodes available to schedule pods.")
            )
            await self._unschedulable_now(pod, key, message)
            return None
        name = best["metadata"]["name"]
        self._assume(key, name, req)
        try:
            bound = dict(pod)
            bound["spec"] = {**pod["spec"], "nodeName": name}
            await self.writer.update(bound)
        except BaseException:
            self._forget(key)
            raise
        self._unschedulable.discard(key)
        md = pod["metadata"]
        self.events.normal(
            pod,
            "Scheduled",
            f"Successfully assigned {md.get('namespace')}/{md['name']} to {name}",
            action="Binding",
        )
        return None

    async def _unschedulable_now(self, pod: Obj, key: Key, message: str) -> None:
        self._unschedulable.add(key)
        cond = get_condition(pod, "PodScheduled")
        if (
            cond is not None
            and cond.get("status") == "False"
            and cond.get("reason") == "Unschedulable"
            and cond.get("message") == message
        ):
            return
        self.events.warning(pod, "FailedScheduling", message, action="Scheduling")
        status = dict(pod.get("status") or {})
        status["conditions"] = set_condition(
            conditions_of(pod), "PodScheduled", "False", "Unschedulable", message, clock=self.clock
        )
        status.setdefault("phase", "Pending")
        await self.writer.update_status(with_status(pod, status))
