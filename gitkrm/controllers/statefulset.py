"""The StatefulSet controller: pods with stable names, and their claims, in order.

Pods are `<set>-0`, `<set>-1`, ... (from spec.ordinals.start), each with a
PersistentVolumeClaim `<template>-<set>-<ordinal>` per volumeClaimTemplate, created before
the pod. With podManagementPolicy OrderedReady a pod is created only once every lower
ordinal is Running and Ready, and scaling down removes the highest ordinal first, one at a
time; Parallel does both at once. RollingUpdate replaces pods from the highest ordinal down
to `partition`, one at a time, waiting for each to be Ready; OnDelete leaves that to the
user. Revisions are ControllerRevisions; status carries currentRevision / updateRevision
and the counts. persistentVolumeClaimRetentionPolicy Delete is honoured through owner
references (whenDeleted) and deletion on scale-down (whenScaled).
"""

from __future__ import annotations

import contextlib

from gitkrm.cache.informer import Key
from gitkrm.controllers.history import REVISION_HASH, ensure_revision, template_of
from gitkrm.controllers.kinds import CONTROLLER_REVISION, POD, PVC, STATEFULSET
from gitkrm.controllers.objects import (
    OWNER_INDEX,
    being_deleted,
    labels,
    owner_ref,
    pod_active,
    pod_phase,
    pod_ready,
    uid,
)
from gitkrm.controllers.pods import Availability, claim, pod_from_template
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.selectors import selector_of
from gitkrm.controllers.writer import ref_of
from gitkrm.errors import AlreadyExists, NotFound
from gitkrm.krm import Obj
from gitkrm.store.protocol import Preconditions

POD_NAME = "statefulset.kubernetes.io/pod-name"
POD_INDEX = "apps.kubernetes.io/pod-index"


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _ordinal(sts: Obj, pod: Obj) -> int | None:
    prefix = sts["metadata"]["name"] + "-"
    name = pod["metadata"]["name"]
    if not name.startswith(prefix) or not name[len(prefix) :].isdigit():
        return None
    return int(name[len(prefix) :])


class StatefulSetController(Controller):
    name = "statefulset"
    component = "statefulset-controller"

    def setup(self) -> None:
        self.sets = self.watch(STATEFULSET, primary=True)
        self.pods = self.watch_owned(POD, "StatefulSet", claiming=True)
        self.claims = self.watch(PVC)
        self.claims.add_handler(self._on_claim)
        self.revisions = self.watch_owned(CONTROLLER_REVISION)

    def _on_claim(self, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        if obj is None:
            return
        ns = obj["metadata"].get("namespace") or ""
        name = obj["metadata"]["name"]
        for sts in self.sets.objects(ns):
            if f"-{sts['metadata']['name']}-" in name:
                self.queue.add((ns, sts["metadata"]["name"]))

    async def reconcile(self, key: Key) -> float | None:
        sts = self.sets.get_key(key)
        if sts is None:
            return None
        pods = await claim(self.writer, self.pods, sts, selector_of(sts))
        spec = sts.get("spec") or {}
        template = spec.get("template") or {}
        update = await ensure_revision(self.writer, self.revisions, sts, template)
        update_name = update["metadata"]["name"]
        current_name = (sts.get("status") or {}).get("currentRevision") or update_name
        current = self.revisions.get(key[0], current_name) or update
        again: float | None = None
        if not being_deleted(sts):
            again = await self._manage(sts, pods, update, current)
        pods = self.pods.by_index(OWNER_INDEX, uid(sts))
        wait = await self._status(sts, pods, update_name, current_name)
        if wait is not None:
            again = wait if again is None else min(again, wait)
        return again

    def _pod(self, sts: Obj, ordinal: int, revision: Obj) -> Obj:
        md = sts["metadata"]
        spec = sts.get("spec") or {}
        name = f"{md['name']}-{ordinal}"
        template = template_of(revision) or (spec.get("template") or {})
        pod = pod_from_template(
            sts,
            template,
            name=name,
            extra_labels={
                POD_NAME: name,
                REVISION_HASH: revision["metadata"]["name"],
                POD_INDEX: str(ordinal),
            },
        )
        pod_spec = dict(pod["spec"])
        pod_spec["hostname"] = name
        if spec.get("serviceName"):
            pod_spec["subdomain"] = spec["serviceName"]
        claims = {
            str(
                (t.get("metadata") or {}).get("name")
            ): f"{(t.get('metadata') or {}).get('name')}-{md['name']}-{ordinal}"
            for t in spec.get("volumeClaimTemplates") or ()
            if isinstance(t, dict)
        }
        if claims:
            volumes = [
                v
                for v in pod_spec.get("volumes") or ()
                if isinstance(v, dict) and v.get("name") not in claims
            ]
            volumes += [
                {"name": n, "persistentVolumeClaim": {"claimName": c}} for n, c in claims.items()
            ]
            pod_spec["volumes"] = volumes
        pod["spec"] = pod_spec
        return pod

    async def _claims(self, sts: Obj, ordinal: int, pod: Obj | None) -> None:
        md = sts["metadata"]
        spec = sts.get("spec") or {}
        policy = spec.get("persistentVolumeClaimRetentionPolicy") or {}
        selector_labels = (spec.get("selector") or {}).get("matchLabels") or {}
        for t in spec.get("volumeClaimTemplates") or ():
            if not isinstance(t, dict):
                continue
            tmeta = t.get("metadata") or {}
            name = f"{tmeta.get('name')}-{md['name']}-{ordinal}"
            if self.claims.get(md.get("namespace"), name) is not None:
                continue
            body: Obj = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": name,
                    "namespace": md.get("namespace"),
                    "labels": {**(tmeta.get("labels") or {}), **selector_labels},
                },
                "spec": {k: v for k, v in (t.get("spec") or {}).items()},
            }
            if tmeta.get("annotations"):
                body["metadata"]["annotations"] = dict(tmeta["annotations"])
            if policy.get("whenDeleted") == "Delete":
                body["metadata"]["ownerReferences"] = [owner_ref(sts, controller=False)]
            with contextlib.suppress(AlreadyExists):
                await self.writer.create(body)
                pod_name = f"{md['name']}-{ordinal}"
                self.events.normal(
                    sts,
                    "SuccessfulCreate",
                    f"create Claim {name} Pod {pod_name} in StatefulSet {md['name']} success",
                )

    async def _manage(self, sts: Obj, pods: list[Obj], update: Obj, current: Obj) -> float | None:
        spec = sts.get("spec") or {}
        replicas = _int(spec.get("replicas"), 1)
        start = _int((spec.get("ordinals") or {}).get("start"), 0)
        parallel = spec.get("podManagementPolicy") == "Parallel"
        strategy = spec.get("updateStrategy") or {}
        rolling = (strategy.get("type") or "RollingUpdate") == "RollingUpdate"
        partition = _int((strategy.get("rollingUpdate") or {}).get("partition"), 0)
        by_ordinal: dict[int, Obj] = {}
        for p in pods:
            o = _ordinal(sts, p)
            if o is not None:
                by_ordinal[o] = p
        wanted = range(start, start + replicas)
        # Failed pods are deleted, to be created again.
        for o, p in list(by_ordinal.items()):
            if pod_phase(p) == "Failed" and not being_deleted(p):
                await self._delete_pod(sts, p)
                del by_ordinal[o]
        for o in wanted:
            have = by_ordinal.get(o)
            if have is None:
                revision = current if rolling and o < start + partition else update
                await self._claims(sts, o, None)
                with contextlib.suppress(AlreadyExists):
                    created = await self.writer.create(self._pod(sts, o, revision))
                    self._pod_event(sts, "Create", created)
                if not parallel:
                    return None
            elif not parallel and not (pod_ready(have) and pod_active(have)):
                return None
        condemned = sorted((o for o in by_ordinal if o not in wanted), reverse=True)
        for o in condemned:
            p = by_ordinal[o]
            if not parallel and any(not pod_ready(q) for k, q in by_ordinal.items() if k in wanted):
                return None
            if not being_deleted(p):
                await self._delete_pod(sts, p)
                if (spec.get("persistentVolumeClaimRetentionPolicy") or {}).get(
                    "whenScaled"
                ) == "Delete":
                    await self._drop_claims(sts, o)
            if not parallel:
                return None
        if not rolling:
            return None
        update_name = update["metadata"]["name"]
        for o in sorted(wanted, reverse=True):
            if o < start + partition:
                break
            pod = by_ordinal.get(o)
            if pod is None or being_deleted(pod):
                return None
            if labels(pod).get(REVISION_HASH) != update_name:
                if any(not pod_ready(q) for q in by_ordinal.values()):
                    return None
                await self._delete_pod(sts, pod)
                return None
            if not pod_ready(pod):
                return None
        return None

    def _pod_event(self, sts: Obj, verb: str, pod: Obj) -> None:
        """kube's recordPodEvent: `create Pod web-0 in StatefulSet web successful`."""
        self.events.normal(
            sts,
            f"Successful{verb}",
            f"{verb.lower()} Pod {pod['metadata']['name']} in StatefulSet "
            f"{sts['metadata']['name']} successful",
        )

    async def _delete_pod(self, sts: Obj, pod: Obj) -> None:
        with contextlib.suppress(NotFound):
            await self.writer.delete(ref_of(pod), preconditions=Preconditions(uid=uid(pod)))
            self._pod_event(sts, "Delete", pod)

    async def _drop_claims(self, sts: Obj, ordinal: int) -> None:
        md = sts["metadata"]
        for t in (sts.get("spec") or {}).get("volumeClaimTemplates") or ():
            name = f"{(t.get('metadata') or {}).get('name')}-{md['name']}-{ordinal}"
            found = self.claims.get(md.get("namespace"), name)
            if found is not None:
                with contextlib.suppress(NotFound):
                    await self.writer.delete(ref_of(found))

    async def _status(
        self, sts: Obj, pods: list[Obj], update_name: str, current_name: str
    ) -> float | None:
        spec = sts.get("spec") or {}
        counts = Availability(_int(spec.get("minReadySeconds"), 0), now=self.clock.time())
        replicas = current = updated = 0
        for p in pods:
            if not pod_active(p):
                continue
            replicas += 1
            rev = labels(p).get(REVISION_HASH)
            if rev == current_name:
                current += 1
            if rev == update_name:
                updated += 1
            counts.add(p)
        want = _int(spec.get("replicas"), 1)
        if updated == want and counts.ready == want and replicas == want:
            current_name, current = update_name, updated
        status: dict[str, object] = {
            "observedGeneration": sts["metadata"].get("generation") or 1,
            "replicas": replicas,
            "readyReplicas": counts.ready,
            "currentReplicas": current,
            "updatedReplicas": updated,
            "availableReplicas": counts.available,
            "currentRevision": current_name,
            "updateRevision": update_name,
            "collisionCount": (sts.get("status") or {}).get("collisionCount") or 0,
        }
        status = {k: v for k, v in status.items() if v or k in ("replicas", "availableReplicas")}
        await self.writer.set_status(sts, status)
        return counts.again()
