"""What a simulation predicts, as values, and the pure rules that read it off the twin.

The twin's objects are judged the way the agent judges live ones: health by
`gitkrm.health.health_of`, pods that would not schedule by the scheduler's own
`PodScheduled=False` (reason `Unschedulable`, kube-scheduler's message), pods a policy
denies by the `ReplicaFailure` (FailedCreate) condition the ReplicaSet controller writes,
and endpoints by the rule of the endpoints controller (ready, addressed, not terminating
pods the Service's selector matches), counted before and after.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from gitkrm.controllers.objects import being_deleted, controller_ref, labels, pod_phase, pod_ready
from gitkrm.health import Health, health_of
from gitkrm.krm import GVK, Obj, ObjectRef, ResourceKey
from gitkrm.krm.conditions import get_condition

POD = GVK(group="", version="v1", kind="Pod")
SERVICE = GVK(group="", version="v1", kind="Service")
REPLICA_SET = GVK(group="apps", version="v1", kind="ReplicaSet")


class Stage(StrEnum):
    """Where a write was denied: the revision as a whole (schemas, CEL rules, policies
    checked before anything is written), one of its objects as it was applied, or a
    controller's write (a ReplicaSet creating pods)."""

    REVISION = "revision"
    APPLY = "apply"
    CONTROLLER = "controller"


@dataclass(frozen=True, slots=True)
class ObjectVerdict:
    """An object of a revision after the rollout on the twin."""

    source: str
    ref: ObjectRef
    action: str  # the sync's: created, configured, unchanged, pruned, failed, refused
    health: Health
    reason: str = ""
    message: str = ""

    @property
    def bad(self) -> bool:
        if self.action == "pruned":
            return self.health is not Health.NOT_FOUND
        return self.health is not Health.CURRENT


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """A pod the scheduler could place on no node, and the workload it belongs to."""

    pod: ObjectRef
    owner: ObjectRef | None
    message: str


@dataclass(frozen=True, slots=True)
class FailingPod:
    """A pod health judges Failed once running (crash-looping containers, a failed pod of
    a workload that should keep running)."""

    pod: ObjectRef
    owner: ObjectRef | None
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class NoEndpoints:
    """A Service with no ready endpoint on the twin: it had `before` in the live store,
    or is `new` (created by the revision)."""

    service: ObjectRef
    before: int
    new: bool


@dataclass(frozen=True, slots=True)
class HookFailure:
    source: str
    phase: str
    ref: ObjectRef
    state: str
    message: str


@dataclass(frozen=True, slots=True)
class Denial:
    stage: Stage
    message: str
    ref: ObjectRef | None = None
    source: str = ""


@dataclass(frozen=True, slots=True)
class Simulation:
    """The predicted outcome of applying the revisions to a twin of the live store.

    `elapsed`: wall seconds from the copy to the verdict; `budget`: the `--for` given, in
    simulated seconds; `settled`: nothing more would change within the window (otherwise
    what the twin showed when the wall-time limit ended the run); `simulated`: the
    simulated seconds the twin ran (the window, when settled); `settled_after`: simulated
    seconds until its last change; `sources`: the sources applied together to this twin."""

    elapsed: float
    budget: float
    settled: bool
    simulated: float = 0.0
    settled_after: float | None = None
    sources: tuple[str, ...] = ()
    objects: tuple[ObjectVerdict, ...] = ()
    unschedulable: tuple[Unschedulable, ...] = ()
    failing: tuple[FailingPod, ...] = ()
    no_endpoints: tuple[NoEndpoints, ...] = ()
    hooks: tuple[HookFailure, ...] = ()
    denials: tuple[Denial, ...] = ()
    errors: tuple[str, ...] = ()  # what stopped a source from being simulated at all

    @property
    def ok(self) -> bool:
        """Nothing would go wrong: every object Current (pruned ones gone), no pod left
        unscheduled or failing, no Service without endpoints, no failed hook, nothing denied."""
        return not (
            self.errors
            or self.denials
            or self.hooks
            or self.unschedulable
            or self.failing
            or self.no_endpoints
            or any(o.bad for o in self.objects)
        )


def for_source(sim: Simulation, name: str, *, first: bool) -> Simulation:
    """The part of a shared twin's outcome that concerns source `name`: its objects,
    hooks, denials and errors, and the pods and Services of workloads it declares; what no
    source declares (pods of live workloads, Services outside every revision) goes to the
    `first` source's part."""
    mine = {o.ref.key for o in sim.objects if o.source == name}
    anyone = {o.ref.key for o in sim.objects}

    def ours(ref: ObjectRef | None) -> bool:
        key = ref.key if ref is not None else None
        return key in mine or (first and key not in anyone)

    prefix = f"source {name}:"
    return replace(
        sim,
        objects=tuple(o for o in sim.objects if o.source == name),
        unschedulable=tuple(u for u in sim.unschedulable if ours(u.owner or u.pod)),
        failing=tuple(f for f in sim.failing if ours(f.owner or f.pod)),
        no_endpoints=tuple(n for n in sim.no_endpoints if ours(n.service)),
        hooks=tuple(h for h in sim.hooks if h.source == name),
        denials=tuple(d for d in sim.denials if d.source == name or (not d.source and ours(d.ref))),
        errors=tuple(
            e for e in sim.errors if e.startswith(prefix) or (first and not e.startswith("source "))
        ),
    )


def _ref(obj: Obj) -> ObjectRef:
    return ObjectRef.of(obj)


def _by_name(objs: Iterable[Obj]) -> dict[tuple[str, str], Obj]:
    out: dict[tuple[str, str], Obj] = {}
    for o in objs:
        md = o.get("metadata") or {}
        out[(str(md.get("namespace") or ""), str(md.get("name") or ""))] = o
    return out


def owner_of(pod: Obj, replica_sets: Mapping[tuple[str, str], Obj]) -> ObjectRef | None:
    """The workload a pod belongs to: its controller, and a ReplicaSet's own controller (a
    Deployment) when it has one."""
    ns = str((pod.get("metadata") or {}).get("namespace") or "")
    ref = controller_ref(pod)
    if ref is None:
        return None
    owner = _owner_ref(ref, ns)
    if owner.kind == "ReplicaSet" and owner.group == "apps":
        rs = replica_sets.get((ns, owner.name))
        up = controller_ref(rs) if rs is not None else None
        if up is not None:
            return _owner_ref(up, ns)
    return owner


def _owner_ref(ref: Mapping[str, object], namespace: str) -> ObjectRef:
    gvk = GVK.from_api_version(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
    return ObjectRef(
        group=gvk.group, kind=gvk.kind, name=str(ref.get("name") or ""), namespace=namespace or None
    )


def unschedulable(pods: Iterable[Obj], replica_sets: Iterable[Obj]) -> list[Unschedulable]:
    """Pending pods the scheduler marked PodScheduled=False, reason Unschedulable."""
    by_name = _by_name(replica_sets)
    out: list[Unschedulable] = []
    for pod in pods:
        if pod_phase(pod) != "Pending" or being_deleted(pod):
            continue
        cond = get_condition(pod, "PodScheduled")
        if cond is None or cond.get("status") != "False" or cond.get("reason") != "Unschedulable":
            continue
        out.append(
            Unschedulable(
                pod=_ref(pod), owner=owner_of(pod, by_name), message=str(cond.get("message") or "")
            )
        )
    return sorted(out, key=lambda u: (str(u.owner), str(u.pod)))


def failing(pods: Iterable[Obj], replica_sets: Iterable[Obj], now: datetime) -> list[FailingPod]:
    """Pods of workloads health judges Failed, other than for being unschedulable (listed
    apart, with the scheduler's message): crash-looping containers, a pod that failed."""
    by_name = _by_name(replica_sets)
    out: list[FailingPod] = []
    for pod in pods:
        if pod_ready(pod) and pod_phase(pod) == "Running":
            continue  # Current: most pods, looked at without judging them
        owner = owner_of(pod, by_name)
        if owner is None or owner.kind in ("Job", "CronJob") or being_deleted(pod):
            continue  # a Job's failed pods are its own business (backoffLimit)
        h = health_of(pod, now=now)
        if h.status is Health.FAILED and h.reason != "PodUnschedulable":
            out.append(FailingPod(_ref(pod), owner, h.reason, h.message))
        elif pod_phase(pod) == "Failed":
            out.append(FailingPod(_ref(pod), owner, "PodFailed", "the pod failed"))
    return sorted(out, key=lambda f: (str(f.owner), str(f.pod)))


def controller_denials(replica_sets: Iterable[Obj]) -> list[Denial]:
    """ReplicaSets that could not create their pods (ReplicaFailure, FailedCreate): an
    admission policy or a schema denied the pod, named with the Deployment owning it."""
    out: list[Denial] = []
    for rs in replica_sets:
        cond = get_condition(rs, "ReplicaFailure")
        if cond is None or cond.get("status") != "True":
            continue
        ns = str((rs.get("metadata") or {}).get("namespace") or "")
        up = controller_ref(rs)
        ref = _owner_ref(up, ns) if up is not None else _ref(rs)
        out.append(Denial(Stage.CONTROLLER, str(cond.get("message") or ""), ref))
    return sorted(out, key=lambda d: str(d.ref))


def ready_endpoints(services: Iterable[Obj], pods: Iterable[Obj]) -> dict[ResourceKey, int]:
    """Per Service with a selector: how many ready addresses its Endpoints would list."""
    by_label: dict[tuple[str, str, str], list[Obj]] = {}  # (namespace, key, value) -> pods
    for pod in pods:
        if (
            pod_ready(pod)
            and not being_deleted(pod)
            and pod_phase(pod) not in ("Succeeded", "Failed")
            and (pod.get("status") or {}).get("podIP")
        ):
            ns = str(pod["metadata"].get("namespace") or "")
            for k, v in labels(pod).items():
                by_label.setdefault((ns, k, v), []).append(pod)
    out: dict[ResourceKey, int] = {}
    for svc in services:
        selector = (svc.get("spec") or {}).get("selector")
        if not isinstance(selector, dict) or not selector or being_deleted(svc):
            continue
        ns = str(svc["metadata"].get("namespace") or "")
        k0, v0 = next(iter(selector.items()))
        out[ResourceKey.of(svc)] = sum(
            1
            for p in by_label.get((ns, k0, v0), ())
            if all(labels(p).get(k) == v for k, v in selector.items())
        )
    return out


def without_endpoints(
    before: Mapping[ResourceKey, int],
    after: Mapping[ResourceKey, int],
    created: Iterable[ResourceKey],
) -> list[NoEndpoints]:
    """Services that had ready endpoints and would have none, and Services the revision
    creates that would have none."""
    new = set(created)
    out = [
        NoEndpoints(service=key.ref("v1"), before=before.get(key, 0), new=key in new)
        for key, count in after.items()
        if count == 0 and (before.get(key, 0) > 0 or key in new)
    ]
    return sorted(out, key=lambda n: str(n.service))
