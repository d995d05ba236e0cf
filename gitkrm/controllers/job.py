"""The Job controller: pods run to completion.

Up to `parallelism` pods run at once until `completions` have Succeeded (Indexed jobs run
one pod per completion index); then the Job gets SuccessCriteriaMet and Complete. Failed
pods are replaced after the Job controller's backoff (`options.failure_backoff`, doubling)
until more than `backoffLimit` have failed, or `activeDeadlineSeconds` passes: then the Job
gets FailureTarget and Failed and its running pods are deleted. `suspend` deletes the
running pods (Suspended condition). A finished Job with ttlSecondsAfterFinished is deleted
that long after it finished. Counts stay monotonic even if finished pods are deleted.
"""

from __future__ import annotations

import contextlib

from gitkrm.cache.informer import Key
from gitkrm.controllers.kinds import JOB, POD
from gitkrm.controllers.objects import (
    OWNER_INDEX,
    annotations_of,
    being_deleted,
    job_finished,
    pod_active,
    pod_phase,
    pod_ready,
    uid,
    with_status,
)
from gitkrm.controllers.pods import (
    claim,
    create_pods,
    delete_pods,
    deletion_rank,
    failure_backoff,
    pod_from_template,
)
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.selectors import selector_of
from gitkrm.controllers.writer import ref_of
from gitkrm.errors import NotFound
from gitkrm.krm import Obj
from gitkrm.krm.clock import parse_timestamp, stamp
from gitkrm.krm.conditions import conditions_of, get_condition, set_condition
from gitkrm.krm.types import Condition
from gitkrm.store.protocol import Preconditions, Propagation

INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _index(pod: Obj) -> int | None:
    raw = annotations_of(pod).get(INDEX_ANNOTATION)
    return int(raw) if isinstance(raw, str) and raw.isdigit() else None


class JobController(Controller):
    name = "job"
    component = "job-controller"

    def setup(self) -> None:
        self.jobs = self.watch(JOB, primary=True)
        self.pods = self.watch_owned(POD, "Job", claiming=True)

    async def reconcile(self, key: Key) -> float | None:
        job = self.jobs.get_key(key)
        if job is None:
            return None
        pods = await claim(self.writer, self.pods, job, selector_of(job), adopt=False)
        done = job_finished(job)
        if done is not None:
            if done == "Failed":
                active = [p for p in pods if pod_active(p)]
                await delete_pods(self.writer, active, owner=job, events=self.events)
            return await self._ttl(job)
        if being_deleted(job):
            return None
        return await self._sync(job, pods)

    async def _ttl(self, job: Obj) -> float | None:
        ttl = _int((job.get("spec") or {}).get("ttlSecondsAfterFinished"))
        if ttl is None:
            return None
        status = job.get("status") or {}
        kind = job_finished(job) or "Complete"
        cond = get_condition(job, kind) or {}
        at = parse_timestamp(status.get("completionTime")) or parse_timestamp(
            cond.get("lastTransitionTime")
        )
        if at is None:
            return None
        wait = at + ttl - self.clock.time()
        if wait > 0:
            return wait
        with contextlib.suppress(NotFound):
            await self.writer.delete(
                ref_of(job),
                propagation=Propagation.BACKGROUND,
                preconditions=Preconditions(uid=uid(job)),
            )
        return None

    async def _sync(self, job: Obj, pods: list[Obj]) -> float | None:
        spec = job.get("spec") or {}
        old = job.get("status") or {}
        status = dict(old)
        conds = conditions_of(job)
        now = self.clock.time()
        now_stamp = stamp(self.clock)
        active = [p for p in pods if pod_active(p)]
        succeeded_pods = [p for p in pods if pod_phase(p) == "Succeeded"]
        failed_pods = [p for p in pods if pod_phase(p) == "Failed"]
        succeeded = max(int(old.get("succeeded") or 0), len(succeeded_pods))
        failures = max(int(old.get("failed") or 0), len(failed_pods))
        parallelism = _int(spec.get("parallelism"))
        parallelism = 1 if parallelism is None else parallelism
        completions = _int(spec.get("completions"))
        indexed = spec.get("completionMode") == "Indexed" and completions is not None
        backoff_limit = _int(spec.get("backoffLimit"))
        backoff_limit = 6 if backoff_limit is None else backoff_limit
        again: float | None = None
        outcome: tuple[str, str, str] | None = None  # (condition, reason, message)
        if spec.get("suspend"):
            await delete_pods(self.writer, active, owner=job, events=self.events)
            active = []
            if not _is_true(conds, "Suspended"):
                self.events.normal(job, "Suspended", "Job suspended")
            conds = set_condition(
                conds, "Suspended", "True", "JobSuspended", "Job suspended", clock=self.clock
            )
        else:
            if _is_true(conds, "Suspended"):
                self.events.normal(job, "Resumed", "Job resumed")
                conds = set_condition(
                    conds, "Suspended", "False", "JobResumed", "Job resumed", clock=self.clock
                )
            status.setdefault("startTime", now_stamp)
            started = parse_timestamp(status["startTime"]) or now
            deadline = _int(spec.get("activeDeadlineSeconds"))
            done_indexes = {i for i in map(_index, succeeded_pods) if i is not None}
            if indexed:
                succeeded = max(succeeded, len(done_indexes))
            all_done = (
                succeeded >= completions
                if completions is not None
                else (succeeded >= 1 and not active)
            )
            if all_done:
                outcome = (
                    "Complete",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                )
            elif failures > backoff_limit:
                outcome = (
                    "Failed",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                )
            elif deadline is not None and started + deadline <= now:
                outcome = (
                    "Failed",
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                )
            else:
                again = await self._manage(
                    job, active, failed_pods, done_indexes, parallelism, completions, succeeded
                )
                if deadline is not None:
                    left = started + deadline - now + 0.01
                    again = left if again is None else min(again, left)
                active = [p for p in self.pods.by_index(OWNER_INDEX, uid(job)) if pod_active(p)]
            if indexed:
                status["completedIndexes"] = _ranges(sorted(done_indexes))
        if outcome is not None:
            kind, reason, message = outcome
            if kind == "Failed":
                await delete_pods(self.writer, active, owner=job, events=self.events)
                self.events.warning(job, reason, message)
                active = []
                conds = set_condition(
                    conds, "FailureTarget", "True", reason, message, clock=self.clock
                )
            else:
                conds = set_condition(
                    conds, "SuccessCriteriaMet", "True", reason, message, clock=self.clock
                )
                status["completionTime"] = now_stamp
                self.events.normal(job, "Completed", "Job completed")
            conds = set_condition(conds, kind, "True", reason, message, clock=self.clock)
        status["active"] = len(active)
        status["ready"] = sum(1 for p in active if pod_ready(p))
        status["succeeded"] = succeeded
        status["failed"] = failures
        status["terminating"] = 0
        status["uncountedTerminatedPods"] = {}
        for k in ("active", "succeeded", "failed"):
            if not status[k]:
                del status[k]
        if conds:
            status["conditions"] = conds
        if status != old:
            job = await self.writer.update_status(with_status(job, status))
        if outcome is not None:
            ttl = await self._ttl(job)
            return ttl
        return again

    async def _manage(
        self,
        job: Obj,
        active: list[Obj],
        failed_pods: list[Obj],
        done_indexes: set[int],
        parallelism: int,
        completions: int | None,
        succeeded: int,
    ) -> float | None:
        spec = job.get("spec") or {}
        template = spec.get("template") or {}
        name = job["metadata"]["name"]
        if completions is None:
            want = parallelism if succeeded == 0 else 0
        else:
            want = min(parallelism, completions - succeeded)
        if len(active) > want:
            extra = sorted(active, key=deletion_rank)[: len(active) - want]
            await delete_pods(self.writer, extra, owner=job, events=self.events)
            return None
        if len(active) == want:
            return None
        wait = failure_backoff(failed_pods, self.options, now=self.clock.time())
        if wait > 0:
            return wait
        pods: list[Obj] = []
        if spec.get("completionMode") == "Indexed" and completions is not None:
            running = {i for i in map(_index, active) if i is not None}
            free = [i for i in range(completions) if i not in done_indexes and i not in running]
            for i in free[: want - len(active)]:
                pod = pod_from_template(
                    job,
                    template,
                    generate_name=f"{name}-{i}-",
                    extra_labels={INDEX_ANNOTATION: str(i)},
                    extra_annotations={INDEX_ANNOTATION: str(i)},
                )
                pod["spec"] = {**pod["spec"], "hostname": f"{name}-{i}"}
                pods.append(pod)
        else:
            pods = [pod_from_template(job, template) for _ in range(want - len(active))]
        await create_pods(self.writer, pods, owner=job, events=self.events)
        return None


def _is_true(conds: list[Condition], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in conds)


def _ranges(indexes: list[int]) -> str:
    """completedIndexes: `0-2,5`."""
    out: list[str] = []
    start = prev = None
    for i in indexes:
        if start is None:
            start = prev = i
        elif prev is not None and i == prev + 1:
            prev = i
        else:
            out.append(f"{start}-{prev}" if start != prev else str(start))
            start = prev = i
    if start is not None:
        out.append(f"{start}-{prev}" if start != prev else str(start))
    return ",".join(out)
