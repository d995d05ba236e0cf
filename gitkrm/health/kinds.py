"""kstatus's rules for Pod, Job, PersistentVolumeClaim, Service, CRD and Namespace."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gitkrm.health.fields import condition, condition_is, conditions, get_int, get_str
from gitkrm.health.result import Health, HealthResult, current, failed, in_progress
from gitkrm.krm import Obj
from gitkrm.krm.clock import parse_time
from gitkrm.krm.fields import field_value

# How long a pod may stay unschedulable before it is reported as Failed (kstatus).
SCHEDULE_WINDOW = timedelta(seconds=15)


def pod(obj: Obj, now: datetime) -> HealthResult:
    phase = get_str(obj, "status", "phase")
    if phase == "Succeeded":
        return current("Pod has completed successfully")
    if phase == "Failed":
        return current("Pod has completed, but not successfully")
    if phase == "Running":
        if condition_is(obj, "Ready", "True"):
            return current("Pod is Ready")
        looping = crash_looping(obj)
        if looping:
            return failed(
                "ContainerCrashLooping", f"Containers in CrashLoop state: {','.join(looping)}"
            )
        return in_progress("PodRunningNotReady", "Pod is running but is not Ready")
    if phase == "Pending":
        scheduled = condition(obj, "PodScheduled")
        if (
            scheduled is not None
            and scheduled.get("status") == "False"
            and scheduled.get("reason") == "Unschedulable"
        ):
            created = parse_time(field_value(obj, "metadata", "creationTimestamp"))
            if now.tzinfo is None:
                now = now.replace(tzinfo=UTC)
            if created is not None and now - SCHEDULE_WINDOW < created:
                return in_progress("PodNotScheduled", "Pod has not been scheduled")
            return failed("PodUnschedulable", "Pod could not be scheduled")
        return in_progress("PodPending", "Pod is in the Pending phase")
    if not phase:
        return in_progress("PodNotObserved", "Pod phase not available")
    return HealthResult(Health.UNKNOWN, f"unknown phase {phase}", "UnknownPhase")


def crash_looping(obj: Obj) -> list[str]:
    """Names of the containers waiting in CrashLoopBackOff."""
    out = []
    statuses = field_value(obj, "status", "containerStatuses")
    for cs in statuses if isinstance(statuses, list) else ():
        if get_str(cs, "state", "waiting", "reason") == "CrashLoopBackOff":
            out.append(get_str(cs, "name"))
    return out


def job(obj: Obj) -> HealthResult:
    """Current once started (kstatus: a running Job is as expected), Failed when the Job
    failed; Complete and Suspended are Current."""
    parallelism = get_int(obj, "spec", "parallelism", default=1)
    completions = get_int(obj, "spec", "completions", default=parallelism)
    succeeded = get_int(obj, "status", "succeeded", default=0)
    active = get_int(obj, "status", "active", default=0)
    failures = get_int(obj, "status", "failed", default=0)
    for c in conditions(obj):
        if c.get("status") != "True":
            continue
        if c.get("type") == "Complete":
            return current(f"Job Completed. succeeded: {succeeded}/{completions}")
        if c.get("type") == "Failed":
            return failed("JobFailed", f"Job Failed. failed: {failures}/{completions}")
        if c.get("type") == "Suspended":
            return current("Job is suspended")
    if not get_str(obj, "status", "startTime"):
        return in_progress("JobNotStarted", "Job not started")
    return current(f"Job in progress. success:{succeeded}, active: {active}, failed: {failures}")


def completed(obj: Obj) -> HealthResult:
    """Argo CD's health of a Job or Pod that gates a phase or a wave: done (Current) only
    once it has completed, Failed when it failed, in progress while it runs. kstatus calls
    a started Job Current, which is right at the end of a sync but not for a gate."""
    if obj.get("kind") == "Pod":
        phase = get_str(obj, "status", "phase")
        if phase == "Succeeded":
            return current("Pod completed")
        if phase == "Failed":
            return failed("PodFailed", get_str(obj, "status", "message") or "Pod failed")
        return in_progress("PodRunning", f"Pod {phase or 'Pending'}")
    verdict = job(obj)
    if verdict.status is Health.CURRENT and not any(
        c.get("status") == "True" and c.get("type") == "Complete" for c in conditions(obj)
    ):
        return in_progress("JobRunning", verdict.message)
    return verdict


JOB_GONE_AFTER_TTL = HealthResult(
    Health.CURRENT,
    "Job deleted by its ttlSecondsAfterFinished (it had finished)",
    "DeletedAfterFinished",
)
"""The verdict of a Job whose manifest sets ttlSecondsAfterFinished once it is gone: the TTL
controller deletes only finished Jobs, so its absence means done (as Flux's wait)."""


def deletes_itself(obj: Obj) -> bool:
    """Whether a manifest is a Job that the TTL controller deletes once it finishes."""
    return (
        obj.get("kind") == "Job"
        and str(obj.get("apiVersion", "")).startswith("batch/")
        and isinstance(field_value(obj, "spec", "ttlSecondsAfterFinished"), int)
    )


def persistent_volume_claim(obj: Obj) -> HealthResult:
    phase = get_str(obj, "status", "phase", default="unknown")
    if phase == "Bound":
        return current("PVC is Bound")
    if phase == "Lost":
        return failed("ClaimLost", "PVC lost its volume")
    return in_progress("NotBound", f"PVC is not Bound. phase: {phase}")


def service(obj: Obj) -> HealthResult:
    """kstatus wants a LoadBalancer's cluster IP; a cluster's API server allocates it at
    creation, the embedded target's service controller just after, so every type that gets
    one waits for it here."""
    kind = get_str(obj, "spec", "type", default="ClusterIP")
    if kind != "ExternalName" and not get_str(obj, "spec", "clusterIP"):
        return in_progress("NoIPAssigned", f"ClusterIP not set. Service type: {kind}")
    return current("Service is ready")


def custom_resource_definition(obj: Obj) -> HealthResult:
    for c in conditions(obj):
        reason, message = str(c.get("reason") or ""), str(c.get("message") or "")
        if c.get("type") == "NamesAccepted" and c.get("status") == "False":
            return failed(reason or "NamesNotAccepted", message)
        if c.get("type") == "Established":
            if c.get("status") == "False" and reason != "Installing":
                return failed(reason or "NotEstablished", message)
            if c.get("status") == "True":
                return current("CRD is established")
    return in_progress("Installing", "Install in progress")


def namespace(obj: Obj) -> HealthResult:
    phase = get_str(obj, "status", "phase")
    if phase == "Terminating":
        return HealthResult(Health.TERMINATING, "Namespace is terminating", "Terminating")
    return current(f"Namespace is {phase or 'Active'}")


def always_ready(obj: Obj) -> HealthResult:
    return current("Resource is always ready")
