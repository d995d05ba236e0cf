"""The ReplicaSet controller: keeps `spec.replicas` pods of the template running.

Pods are created with generateName `<replicaset>-` and a controller ownerReference, many in
one commit; surplus pods are deleted in kube's order (unscheduled, pending, not ready,
newest first). A deleted or failed pod is replaced (failed ones after the Job controller's
backoff, so a failing template does not spin). Status: replicas, fullyLabeledReplicas,
readyReplicas, availableReplicas (ready for minReadySeconds), observedGeneration and the
ReplicaFailure condition when pods cannot be created.
"""

from __future__ import annotations

import re

from gitkrm.cache.informer import Key, key_of
from gitkrm.controllers.kinds import POD, REPLICASET
from gitkrm.controllers.objects import (
    OWNER_INDEX,
    being_deleted,
    controller_ref,
    labels,
    pod_active,
    pod_ready_since,
    uid,
)
from gitkrm.controllers.pods import (
    Availability,
    claim,
    create_pods,
    delete_pods,
    deletion_rank,
    failure_backoff,
    pod_from_template,
)
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.selectors import selector_of
from gitkrm.errors import GitkrmError
from gitkrm.krm import Obj
from gitkrm.krm.conditions import (
    conditions_of,
    find_condition,
    remove_condition,
    set_condition,
)
from gitkrm.krm.types import Condition

BURST = 500  # pods created or deleted per sync at most (kube's burstReplicas)


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _counted(pod: Obj) -> tuple[object, ...]:
    """What of a pod a ReplicaSet looks at."""
    md = pod["metadata"]
    return (
        md.get("labels"),
        md.get("ownerReferences"),
        md.get("deletionTimestamp"),
        (pod.get("status") or {}).get("phase"),
        pod_ready_since(pod),
    )


class ReplicaSetController(Controller):
    name = "replicaset"
    component = "replicaset-controller"
    batch = 100

    def setup(self) -> None:
        self.sets = self.watch(REPLICASET, primary=True)
        self.pods = self.watch_owned(POD, claiming=True)
        self.pods.add_handler(self._on_pod)

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        if old is not None and new is not None and _counted(old) == _counted(new):
            return  # e.g. bound to a node: nothing a ReplicaSet counts changed
        for obj in (old, new):
            if obj is None:
                continue
            ref = controller_ref(obj)
            if ref is not None:
                if ref.get("kind") == "ReplicaSet":
                    self.queue.add((obj["metadata"].get("namespace") or "", str(ref.get("name"))))
            elif obj is new and not being_deleted(obj):
                ns = obj["metadata"].get("namespace") or ""
                for rs in self.sets.objects(ns):
                    if selector_of(rs).matches(labels(obj)):
                        self.queue.add(key_of(rs))

    async def reconcile(self, key: Key) -> float | None:
        rs = self.sets.get_key(key)
        if rs is None:
            return None
        pods = await claim(self.writer, self.pods, rs, selector_of(rs))
        again: float | None = None
        error: GitkrmError | None = None
        if not being_deleted(rs):
            try:
                again = await self._manage(rs, pods)
            except GitkrmError as e:
                error = e
            pods = [p for p in self.pods.by_index(OWNER_INDEX, uid(rs))]
        wait = await self._sync_status(rs, pods, error)
        if error is not None:
            raise error
        if wait is not None:
            again = wait if again is None else min(again, wait)
        return again

    async def _manage(self, rs: Obj, pods: list[Obj]) -> float | None:
        spec = rs.get("spec") or {}
        want = _int(spec.get("replicas"), 1)
        active = [p for p in pods if pod_active(p)]
        diff = len(active) - want
        if diff < 0:
            wait = failure_backoff(pods, self.options, now=self.clock.time())
            if wait > 0:
                return wait
            template = spec.get("template") or {}
            count = min(-diff, BURST)
            await create_pods(
                self.writer,
                (pod_from_template(rs, template) for _ in range(count)),
                owner=rs,
                events=self.events,
            )
        elif diff > 0:
            doomed = sorted(active, key=deletion_rank)[: min(diff, BURST)]
            await delete_pods(self.writer, doomed, owner=rs, events=self.events)
        return None

    async def _sync_status(
        self, rs: Obj, pods: list[Obj], error: GitkrmError | None
    ) -> float | None:
        spec = rs.get("spec") or {}
        min_ready = _int(spec.get("minReadySeconds"))
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        counts = Availability(min_ready, now=self.clock.time())
        replicas = labelled = 0
        for p in pods:
            if not pod_active(p):
                continue
            replicas += 1
            pl = labels(p)
            if all(pl.get(k) == v for k, v in template_labels.items()):
                labelled += 1
            counts.add(p)
        conds = conditions_of(rs)
        if error is not None:
            if not _same_failure(rs, conds, error.message):
                conds = set_condition(
                    conds, "ReplicaFailure", "True", "FailedCreate", error.message, clock=self.clock
                )
        elif any(c.get("type") == "ReplicaFailure" for c in conds):
            conds = remove_condition(conds, "ReplicaFailure")
        status: dict[str, object] = {"replicas": replicas}
        for field, value in (
            ("fullyLabeledReplicas", labelled),
            ("readyReplicas", counts.ready),
            ("availableReplicas", counts.available),
        ):
            if value:
                status[field] = value
        gen = rs["metadata"].get("generation")
        if gen is not None:
            status["observedGeneration"] = gen
        if conds:
            status["conditions"] = conds
        if not await self.writer.set_status(rs, status):
            return None
        return counts.again()


def _same_failure(rs: Obj, conds: list[Condition], message: str) -> bool:
    """Whether the ReplicaFailure condition already says `message` but for the generated
    name of the pod it names: rewriting it would be a write whose event queues the
    ReplicaSet again at once, bypassing the backoff of failed creates (a policy denying
    every pod would keep the controller busy)."""
    old = find_condition(conds, "ReplicaFailure")
    if old is None or old.get("status") != "True" or old.get("reason") != "FailedCreate":
        return False
    generated = re.compile(re.escape(str(rs["metadata"].get("name") or "")) + r"-[a-z0-9]{5}\b")
    return generated.sub("", str(old.get("message") or "")) == generated.sub("", message)
