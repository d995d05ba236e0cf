"""The CronJob controller: Jobs on a schedule (cron syntax, via apscheduler's CronTrigger).

At each scheduled time a Job `<cronjob>-<minutes since the epoch>` is created from the job
template (owned by the CronJob), unless suspended, past startingDeadlineSeconds, or
concurrencyPolicy Forbid with a Job still running (Replace deletes it first). Finished Jobs
beyond successfulJobsHistoryLimit / failedJobsHistoryLimit are deleted. Status carries the
active Jobs, lastScheduleTime and lastSuccessfulTime. The controller sleeps until the next
scheduled time.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger

from gitkrm.cache.informer import Key
from gitkrm.controllers.kinds import CRONJOB, JOB
from gitkrm.controllers.objects import (
    OWNER_INDEX,
    being_deleted,
    job_finished,
    owner_ref,
    uid,
)
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.writer import ref_of
from gitkrm.errors import AlreadyExists, BadRequest, NotFound
from gitkrm.krm import Obj
from gitkrm.krm.clock import now_of, parse_timestamp, rfc3339
from gitkrm.store.protocol import Propagation

SCHEDULED_AT = "batch.kubernetes.io/cronjob-scheduled-timestamp"
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MISSED_LIMIT = 100


def trigger_of(cronjob: Obj) -> CronTrigger:
    """The schedule, with `TZ=`/`CRON_TZ=` prefixes and spec.timeZone (default UTC)."""
    spec = cronjob.get("spec") or {}
    text = str(spec.get("schedule") or "").strip()
    zone = spec.get("timeZone") or "UTC"
    for prefix in ("TZ=", "CRON_TZ="):
        if text.startswith(prefix):
            zone, _, text = text[len(prefix) :].partition(" ")
            text = text.strip()
    text = MACROS.get(text, text)
    try:
        tz = ZoneInfo(str(zone))
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise BadRequest(
            f'CronJob {cronjob["metadata"]["name"]}: unknown time zone "{zone}"'
        ) from e
    try:
        return CronTrigger.from_crontab(text, timezone=tz)
    except ValueError as e:
        raise BadRequest(
            f'CronJob {cronjob["metadata"]["name"]}: invalid schedule "{text}": {e}'
        ) from e


def _job_ref(job: Obj) -> dict[str, object]:
    md = job["metadata"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": md["name"],
        "namespace": md.get("namespace"),
        "uid": md.get("uid"),
        "resourceVersion": md.get("resourceVersion"),
    }


class CronJobController(Controller):
    name = "cronjob"
    component = "cronjob-controller"

    def setup(self) -> None:
        self.cronjobs = self.watch(CRONJOB, primary=True)
        self.jobs = self.watch_owned(JOB, "CronJob")

    async def reconcile(self, key: Key) -> float | None:
        cj = self.cronjobs.get_key(key)
        if cj is None or being_deleted(cj):
            return None
        spec = cj.get("spec") or {}
        jobs = [j for j in self.jobs.by_index(OWNER_INDEX, uid(cj)) if not being_deleted(j)]
        now = now_of(self.clock)
        status = dict(cj.get("status") or {})
        trigger = trigger_of(cj)
        last = parse_timestamp(status.get("lastScheduleTime")) or parse_timestamp(
            cj["metadata"].get("creationTimestamp")
        )
        since = datetime.fromtimestamp(last or now.timestamp(), UTC)
        due: datetime | None = None
        t = trigger.get_next_fire_time(None, since + timedelta(seconds=1))
        for _ in range(MISSED_LIMIT):
            if t is None or t > now:
                break
            due = t
            t = trigger.get_next_fire_time(t, t + timedelta(seconds=1))
        if due is not None and not spec.get("suspend"):
            deadline = spec.get("startingDeadlineSeconds")
            late = isinstance(deadline, int) and (now - due).total_seconds() > deadline
            if not late:
                jobs = await self._run(cj, jobs, due)
            else:
                when = due.astimezone(UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")
                self.events.warning(
                    cj, "MissSchedule", f"Missed scheduled time to start a job: {when}"
                )
            status["lastScheduleTime"] = rfc3339(due)
        await self._history(cj, jobs)
        jobs = [j for j in self.jobs.by_index(OWNER_INDEX, uid(cj)) if not being_deleted(j)]
        active = sorted(
            (j for j in jobs if job_finished(j) is None), key=lambda j: j["metadata"]["name"]
        )
        self._saw_completed(cj, status, jobs)
        if active:
            status["active"] = [_job_ref(j) for j in active]
        else:
            status.pop("active", None)
        succeeded = [
            parse_timestamp((j.get("status") or {}).get("completionTime"))
            for j in jobs
            if job_finished(j) == "Complete"
        ]
        best = max((s for s in succeeded if s is not None), default=None)
        if best is not None:
            prev = parse_timestamp(status.get("lastSuccessfulTime"))
            if prev is None or best > prev:
                status["lastSuccessfulTime"] = rfc3339(datetime.fromtimestamp(best, UTC))
        await self.writer.set_status(cj, status)
        if t is None:
            return None
        return float(max(0.05, (t - now_of(self.clock)).total_seconds() + 0.05))

    def _saw_completed(self, cj: Obj, status: dict[str, object], jobs: list[Obj]) -> None:
        """kube's SawCompletedJob: a Job listed as active has finished."""
        listed = status.get("active")
        was_active = (
            {r.get("uid") for r in listed or () if isinstance(r, dict)}
            if isinstance(listed, list)
            else set()
        )
        for j in jobs:
            done = job_finished(j)
            if done is not None and uid(j) in was_active:
                name = j["metadata"]["name"]
                self.events.normal(
                    cj, "SawCompletedJob", f"Saw completed job: {name}, condition: {done}"
                )

    async def _delete_job(self, cj: Obj, job: Obj) -> None:
        with contextlib.suppress(NotFound):
            await self.writer.delete(ref_of(job), propagation=Propagation.BACKGROUND)
            self.events.normal(cj, "SuccessfulDelete", f"Deleted job {job['metadata']['name']}")

    async def _run(self, cj: Obj, jobs: list[Obj], due: datetime) -> list[Obj]:
        spec = cj.get("spec") or {}
        running = [j for j in jobs if job_finished(j) is None]
        policy = spec.get("concurrencyPolicy") or "Allow"
        if running and policy == "Forbid":
            self.events.normal(
                cj,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy "
                "is Forbid",
            )
            return jobs
        if running and policy == "Replace":
            for j in running:
                await self._delete_job(cj, j)
            jobs = [j for j in jobs if j not in running]
        template = spec.get("jobTemplate") or {}
        tmeta = template.get("metadata") or {}
        md = cj["metadata"]
        name = f"{md['name']}-{int(due.timestamp()) // 60}"
        body: Obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": md.get("namespace"),
                "labels": dict(tmeta.get("labels") or {}),
                "annotations": {**(tmeta.get("annotations") or {}), SCHEDULED_AT: rfc3339(due)},
                "ownerReferences": [owner_ref(cj)],
            },
            "spec": template.get("spec") or {},
        }
        with contextlib.suppress(AlreadyExists):
            jobs = [*jobs, await self.writer.create(body)]
            self.events.normal(cj, "SuccessfulCreate", f"Created job {name}")
        return jobs

    async def _history(self, cj: Obj, jobs: list[Obj]) -> None:
        spec = cj.get("spec") or {}
        for kind, key, default in (
            ("Complete", "successfulJobsHistoryLimit", 3),
            ("Failed", "failedJobsHistoryLimit", 1),
        ):
            limit = spec.get(key)
            limit = default if not isinstance(limit, int) else limit
            done = sorted(
                (j for j in jobs if job_finished(j) == kind),
                key=lambda j: parse_timestamp(j["metadata"].get("creationTimestamp")) or 0.0,
            )
            for j in done[: max(0, len(done) - limit)]:
                await self._delete_job(cj, j)
