"""Table rows of pods and workloads, as kube-apiserver prints them for `kubectl get`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gitkrm.krm import Obj
from gitkrm.krm.clock import parse_timestamp
from gitkrm.server.humanize import human_duration, since
from gitkrm.server.printing import (
    AGE,
    CONTAINERS,
    IMAGES,
    NAME,
    NONE,
    SELECTOR,
    Cells,
    Column,
    Printer,
    age,
    containers_images,
    format_label_selector,
    format_labels,
    has_condition,
    m,
    name_of,
    num,
    selector_string,
)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _later(a: float | None, b: object) -> float | None:
    t = parse_timestamp(b)
    if t is None:
        return a
    return t if a is None or t > a else a


def _finished(cs: Mapping[str, object]) -> object:
    return m(cs, "lastState", "terminated", "finishedAt")


def _pod_reason(pod: Obj) -> tuple[str, int, int, float | None, int]:
    """(status, ready, restarts, last restart time, total) as printPod computes them."""
    spec = _mapping(pod.get("spec"))
    status = _mapping(pod.get("status"))
    containers = spec.get("containers") or []
    total = len(containers) if isinstance(containers, list) else 0
    reason = str(status.get("phase") or "")
    if status.get("reason"):
        reason = str(status["reason"])
    for c in status.get("conditions") or ():
        if _mapping(c).get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_specs = {
        c.get("name"): c for c in spec.get("initContainers") or () if isinstance(c, Mapping)
    }
    sidecars = {n for n, c in init_specs.items() if c.get("restartPolicy") == "Always"}
    total += len(sidecars)
    ready = restarts = side_restarts = 0
    last: float | None = None
    side_last: float | None = None
    initializing = False
    inits = [c for c in status.get("initContainerStatuses") or () if isinstance(c, Mapping)]
    for i, cs in enumerate(inits):
        restarts += num(cs.get("restartCount"))
        last = _later(last, _finished(cs))
        sidecar = cs.get("name") in sidecars
        if sidecar:
            side_restarts += num(cs.get("restartCount"))
            side_last = _later(side_last, _finished(cs))
        state = _mapping(cs.get("state"))
        term = m(state, "terminated")
        waiting = m(state, "waiting")
        if isinstance(term, Mapping) and num(term.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started") is True:
            if cs.get("ready") is True:
                ready += 1
            continue
        if isinstance(term, Mapping):
            if not term.get("reason"):
                sig = num(term.get("signal"))
                code = num(term.get("exitCode"))
                reason = f"Init:Signal:{sig}" if sig else f"Init:ExitCode:{code}"
            else:
                reason = f"Init:{term['reason']}"
        elif (
            isinstance(waiting, Mapping)
            and waiting.get("reason")
            and waiting.get("reason") != "PodInitializing"
        ):
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    if not initializing or has_condition(pod, "Initialized"):
        restarts, last = side_restarts, side_last
        running = False
        for cs in reversed(status.get("containerStatuses") or []):
            if not isinstance(cs, Mapping):
                continue
            restarts += num(cs.get("restartCount"))
            last = _later(last, _finished(cs))
            state = _mapping(cs.get("state"))
            waiting, term = m(state, "waiting"), m(state, "terminated")
            if isinstance(waiting, Mapping) and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif isinstance(term, Mapping) and term.get("reason"):
                reason = str(term["reason"])
            elif isinstance(term, Mapping):
                sig = num(term.get("signal"))
                reason = f"Signal:{sig}" if sig else f"ExitCode:{num(term.get('exitCode'))}"
            elif cs.get("ready") is True and m(state, "running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running" if has_condition(pod, "Ready") else "NotReady"
    phase = status.get("phase")
    if m(pod, "metadata", "deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    return reason, ready, restarts, last, total


def _pod(pod: Obj, now: float) -> list[object]:
    reason, ready, restarts, last, total = _pod_reason(pod)
    restarts_s = str(restarts)
    if restarts and last is not None:
        restarts_s = f"{restarts} ({human_duration(now - last)} ago)"
    ips = m(pod, "status", "podIPs")
    ip = ""
    if isinstance(ips, list) and ips and isinstance(ips[0], Mapping):
        ip = str(ips[0].get("ip") or "")
    gates = m(pod, "spec", "readinessGates")
    gates_s = NONE
    if isinstance(gates, list) and gates:
        wanted = {g.get("conditionType") for g in gates if isinstance(g, Mapping)}
        true = sum(
            1
            for c in m(pod, "status", "conditions") or ()
            if isinstance(c, Mapping) and c.get("type") in wanted and c.get("status") == "True"
        )
        gates_s = f"{true}/{len(gates)}"
    return [
        name_of(pod),
        f"{ready}/{total}",
        reason,
        restarts_s,
        since(m(pod, "metadata", "creationTimestamp"), now),
        ip or NONE,
        m(pod, "spec", "nodeName") or NONE,
        m(pod, "status", "nominatedNodeName") or NONE,
        gates_s,
    ]


POD = Printer(
    (
        NAME,
        Column("Ready", description="The aggregate readiness state of this pod."),
        Column("Status", description="The aggregate status of the containers in this pod."),
        Column("Restarts", description="The number of times the containers were restarted."),
        AGE,
        Column("IP", priority=1, description="IP address allocated to the pod."),
        Column("Node", priority=1, description="The node the pod is scheduled on."),
        Column("Nominated Node", priority=1, description="The node nominated for the pod."),
        Column("Readiness Gates", priority=1, description="Pod readiness gates."),
    ),
    _pod,
)


def _pod_template(obj: Obj) -> object:
    return m(obj, "spec", "template", "spec")


def _spec_selector(obj: Obj) -> str:
    return selector_string(m(obj, "spec", "selector"))


def workload(
    columns: tuple[Column, ...],
    cells: Cells,
    *,
    pod_spec: Callable[[Obj], object] = _pod_template,
    selector: Callable[[Obj], str] | None = _spec_selector,
) -> Printer:
    """A workload's table: its name, its own `columns` (`cells`), then its age and what
    kube's `layoutContainerCells` adds: the pod template's containers and images, and
    the workload's selector (unless `selector` is None)."""
    trailing = (
        (AGE, CONTAINERS, IMAGES) if selector is None else (AGE, CONTAINERS, IMAGES, SELECTOR)
    )

    def row(obj: Obj, now: float) -> list[object]:
        cs, images = containers_images(pod_spec(obj))
        out = [name_of(obj), *cells(obj, now), age(obj, now), cs, images]
        if selector is not None:
            out.append(selector(obj))
        return out

    return Printer((NAME, *columns, *trailing), row)


def _deployment(d: Obj, now: float) -> list[object]:
    replicas = num(m(d, "spec", "replicas"))
    return [
        f"{num(m(d, 'status', 'readyReplicas'))}/{replicas}",
        num(m(d, "status", "updatedReplicas")),
        num(m(d, "status", "availableReplicas")),
    ]


DEPLOYMENT = workload(
    (
        Column("Ready", description="Number of the pod with ready state."),
        Column("Up-to-date", "integer", description="Total number of updated replicas."),
        Column("Available", "integer", description="Total number of available replicas."),
    ),
    _deployment,
)


def _replica_set_selector(rs: Obj) -> str:
    sel = m(rs, "spec", "selector")
    if rs.get("kind") == "ReplicationController":
        return format_labels(sel)
    return selector_string(sel)


def _replica_set(rs: Obj, now: float) -> list[object]:
    return [
        num(m(rs, "spec", "replicas")),
        num(m(rs, "status", "replicas")),
        num(m(rs, "status", "readyReplicas")),
    ]


REPLICA_SET = workload(
    (
        Column("Desired", "integer", description="Number of desired replicas."),
        Column("Current", "integer", description="Number of current replicas."),
        Column("Ready", "integer", description="Number of ready replicas."),
    ),
    _replica_set,
    selector=_replica_set_selector,
)


def _stateful_set(s: Obj, now: float) -> list[object]:
    ready = num(m(s, "status", "readyReplicas"))
    return [f"{ready}/{num(m(s, 'spec', 'replicas'))}"]


STATEFUL_SET = workload(
    (Column("Ready", description="Number of the pod with ready state."),),
    _stateful_set,
    selector=None,
)


def _daemon_set(d: Obj, now: float) -> list[object]:
    st = _mapping(d.get("status"))
    return [
        num(st.get("desiredNumberScheduled")),
        num(st.get("currentNumberScheduled")),
        num(st.get("numberReady")),
        num(st.get("updatedNumberScheduled")),
        num(st.get("numberAvailable")),
        format_labels(m(d, "spec", "template", "spec", "nodeSelector")),
    ]


DAEMON_SET = workload(
    (
        Column("Desired", "integer", description="Nodes that should run the daemon pod."),
        Column("Current", "integer", description="Nodes running at least one daemon pod."),
        Column("Ready", "integer", description="Nodes with a ready daemon pod."),
        Column("Up-to-date", "integer", description="Nodes running the updated daemon pod."),
        Column("Available", "integer", description="Nodes with an available daemon pod."),
        Column("Node Selector", description="The pod template's node selector."),
    ),
    _daemon_set,
)


def _job_status(job: Obj) -> str:
    for cond, shown in (("Complete", "Complete"), ("Failed", "Failed")):
        if has_condition(job, cond):
            return shown
    if m(job, "metadata", "deletionTimestamp"):
        return "Terminating"
    for cond in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if has_condition(job, cond):
            return cond
    return "Running"


def _job(job: Obj, now: float) -> list[object]:
    succeeded = num(m(job, "status", "succeeded"))
    completions = m(job, "spec", "completions")
    parallelism = m(job, "spec", "parallelism")
    if isinstance(completions, int):
        comp = f"{succeeded}/{completions}"
    elif isinstance(parallelism, int) and parallelism > 1:
        comp = f"{succeeded}/1 of {parallelism}"
    else:
        comp = f"{succeeded}/1"
    start = parse_timestamp(m(job, "status", "startTime"))
    end = parse_timestamp(m(job, "status", "completionTime"))
    duration = ""
    if start is not None:
        duration = human_duration((end if end is not None else now) - start)
    return [_job_status(job), comp, duration]


JOB = workload(
    (
        Column("Status", description="Status of the job."),
        Column("Completions", description="The successfully completed pods and the wanted."),
        Column("Duration", description="Time required to complete the job."),
    ),
    _job,
)


def _cron_job(cj: Obj, now: float) -> list[object]:
    last = m(cj, "status", "lastScheduleTime")
    active = m(cj, "status", "active")
    suspend = m(cj, "spec", "suspend")
    return [
        m(cj, "spec", "schedule") or "",
        m(cj, "spec", "timeZone") or NONE,
        "<unset>" if suspend is None else ("True" if suspend else "False"),
        len(active) if isinstance(active, list) else 0,
        since(last, now) if last else NONE,
    ]


CRON_JOB = workload(
    (
        Column("Schedule", description="The schedule in Cron format."),
        Column("Timezone", description="The time zone of the schedule."),
        Column("Suspend", "boolean", description="Whether later executions are suspended."),
        Column("Active", "integer", description="Running jobs."),
        Column("Last Schedule", description="When the job was last scheduled."),
    ),
    _cron_job,
    pod_spec=lambda cj: m(cj, "spec", "jobTemplate", "spec", "template", "spec"),
    selector=lambda cj: format_label_selector(m(cj, "spec", "jobTemplate", "spec", "selector")),
)
