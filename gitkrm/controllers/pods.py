"""What the workload controllers share about their pods: building pods from templates,
claiming (adopt / release) pods by selector, creating and deleting many at once, ranking
pods for deletion, failure backoff, counting ready and available pods."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gitkrm.cache.informer import Informer
from gitkrm.controllers.objects import (
    OWNER_INDEX,
    being_deleted,
    controller_ref,
    labels,
    owner_ref,
    pod_available_in,
    pod_phase,
    pod_ready,
    pod_ready_since,
    uid,
)
from gitkrm.controllers.options import ControllerOptions
from gitkrm.controllers.writer import Writer, ref_of
from gitkrm.errors import Conflict, GitkrmError, Invalid, NotFound
from gitkrm.krm import LabelSelector, Obj
from gitkrm.krm.clock import parse_timestamp
from gitkrm.krm.conditions import get_condition
from gitkrm.krm.types import ObjectMeta
from gitkrm.store.events import EventSink
from gitkrm.store.protocol import Preconditions

ORPHAN_INDEX = "orphan"


def orphan_index(obj: Obj) -> tuple[str, ...]:
    """Index function: the namespace of an object no controller owns."""
    if controller_ref(obj) is not None:
        return ()
    return (obj["metadata"].get("namespace") or "",)


def pod_from_template(
    owner: Obj,
    template: Mapping[str, Any],
    *,
    name: str | None = None,
    generate_name: str | None = None,
    extra_labels: Mapping[str, str] | None = None,
    extra_annotations: Mapping[str, str] | None = None,
) -> Obj:
    """A pod of `owner` (its controller) made from a pod template."""
    tmeta = template.get("metadata") or {}
    md: ObjectMeta = {"namespace": owner["metadata"].get("namespace")}
    if name is not None:
        md["name"] = name
    else:
        md["generateName"] = generate_name or owner["metadata"]["name"] + "-"
    pod_labels = dict(tmeta.get("labels") or {})
    if extra_labels:
        pod_labels.update(extra_labels)
    if pod_labels:
        md["labels"] = pod_labels
    pod_annotations = dict(tmeta.get("annotations") or {})
    if extra_annotations:
        pod_annotations.update(extra_annotations)
    if pod_annotations:
        md["annotations"] = pod_annotations
    if tmeta.get("finalizers"):
        md["finalizers"] = list(tmeta["finalizers"])
    md["ownerReferences"] = [owner_ref(owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": template.get("spec") or {}}


async def claim(
    writer: Writer,
    informer: Informer,
    owner: Obj,
    selector: LabelSelector,
    *,
    adopt: bool = True,
) -> list[Obj]:
    """The objects `owner` controls and that match its selector: releases owned ones that no
    longer match, adopts matching orphans (ControllerRefManager)."""
    owner_uid = uid(owner)
    ns = owner["metadata"].get("namespace") or ""
    out: list[Obj] = []
    deleting = being_deleted(owner)
    for obj in informer.by_index(OWNER_INDEX, owner_uid):
        if selector.matches(labels(obj)):
            out.append(obj)
        elif not deleting:
            await _patch_owner(writer, obj, {"$patch": "delete", "uid": owner_uid})
    if adopt and not deleting and not selector.empty:
        for obj in informer.by_index(ORPHAN_INDEX, ns):
            if being_deleted(obj) or not selector.matches(labels(obj)):
                continue
            adopted = await _patch_owner(writer, obj, owner_ref(owner))
            if adopted is not None:
                out.append(adopted)
    return out


async def _patch_owner(writer: Writer, obj: Obj, entry: Mapping[str, object]) -> Obj | None:
    patch = {"metadata": {"ownerReferences": [dict(entry)], "uid": uid(obj)}}
    try:
        return await writer.patch(ref_of(obj), patch, "strategic")
    except (NotFound, Conflict, Invalid):
        return None  # gone, or changed: the next sync sees it as it is


async def create_pods(
    writer: Writer, pods: Iterable[Obj], *, owner: Obj, events: EventSink
) -> None:
    """Create `pods` at once (their writes share a commit), recording kube's pod-control
    Events on `owner`; the first error is raised once every create has ended."""
    results = await asyncio.gather(*(writer.create(p) for p in pods), return_exceptions=True)
    _record(
        results,
        [r for r in results if not isinstance(r, BaseException)],
        owner,
        events,
        ("SuccessfulCreate", "Created pod", "FailedCreate", "Error creating"),
    )


async def delete_pods(
    writer: Writer, pods: Iterable[Obj], *, owner: Obj, events: EventSink
) -> None:
    """Delete `pods` at once, each only while it has its uid, leaving out the ones being
    deleted, recording kube's pod-control Events on `owner`; a pod already gone is fine,
    the first other error is raised once every delete has ended."""
    doomed = [p for p in pods if not being_deleted(p)]
    results = await asyncio.gather(
        *(writer.delete(ref_of(p), preconditions=Preconditions(uid=uid(p))) for p in doomed),
        return_exceptions=True,
    )
    kept = [r for r in results if not isinstance(r, NotFound)]
    done = [p for p, r in zip(doomed, results, strict=True) if not isinstance(r, BaseException)]
    _record(
        kept,
        done,
        owner,
        events,
        ("SuccessfulDelete", "Deleted pod", "FailedDelete", "Error deleting"),
    )


def _record(
    results: Sequence[object],
    pods: list[Obj],
    owner: Obj,
    events: EventSink,
    texts: tuple[str, str, str, str],
) -> None:
    """kube's RealPodControl events: one per pod written (`Created pod: web-x2x9q`), one per
    failure (`Error creating: ...`); then the first failure is raised."""
    ok_reason, ok_text, failed_reason, failed_text = texts
    for p in pods:
        events.normal(owner, ok_reason, f"{ok_text}: {p['metadata']['name']}")
    failures = [r for r in results if isinstance(r, BaseException)]
    for f in failures:
        if isinstance(f, GitkrmError):
            events.warning(owner, failed_reason, f"{failed_text}: {f.message}")
    if failures:
        raise failures[0]


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_rank(pod: Obj) -> tuple[bool, int, bool, float, int, float]:
    """Sort key: the pods to delete first come first (controller.ActivePods ordering)."""
    spec = pod.get("spec") or {}
    ready_since = pod_ready_since(pod)
    restarts = 0
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        if isinstance(cs, dict):
            restarts = max(restarts, int(cs.get("restartCount") or 0))
    created = parse_timestamp(pod["metadata"].get("creationTimestamp")) or 0.0
    return (
        bool(spec.get("nodeName")),
        _PHASE_RANK.get(pod_phase(pod), 1),
        ready_since is not None,
        -(ready_since or 0.0),
        -restarts,
        -created,
    )


def failure_backoff(pods: Iterable[Obj], options: ControllerOptions, *, now: float) -> float:
    """Seconds to wait before replacing failed pods (0: now): the Job controller's backoff,
    `failure_backoff` * 2^(failures-1) after the latest failure, `failure_backoff_max` at
    most."""
    failures = 0
    latest = 0.0
    for pod in pods:
        if pod_phase(pod) != "Failed":
            continue
        failures += 1
        cond = get_condition(pod, "Ready")
        when = parse_timestamp(cond.get("lastTransitionTime")) if cond is not None else None
        latest = max(latest, when or 0.0)
    if failures == 0:
        return 0.0
    delay = float(min(options.failure_backoff_max, options.failure_backoff * 2 ** (failures - 1)))
    return max(0.0, latest + delay - now)


class Availability:
    """Counts a workload's ready pods, those of them available (ready for minReadySeconds)
    and the seconds until the next one is: what its status reports. `add` each active pod."""

    __slots__ = ("_min_ready", "_now", "available", "ready", "wait")

    def __init__(self, min_ready_seconds: int, *, now: float) -> None:
        self._min_ready = min_ready_seconds
        self._now = now
        self.ready = 0
        self.available = 0
        self.wait: float | None = None

    def add(self, pod: Obj) -> None:
        if not pod_ready(pod):
            return
        self.ready += 1
        left = pod_available_in(pod, self._min_ready, self._now)
        if left == 0:
            self.available += 1
        elif left is not None:
            self.wait = left if self.wait is None else min(self.wait, left)

    def again(self) -> float | None:
        """When to look again, for a ready pod to have become available (None: no such pod)."""
        return None if self.wait is None else self.wait + 0.01
