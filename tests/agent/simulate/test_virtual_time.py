"""Simulated time on the twin: the controllers run on a virtual clock that jumps to the next
timer whenever they are idle, so waits the manifests set (a Deployment's
progressDeadlineSeconds, a Job's activeDeadlineSeconds, a CronJob's schedule) run their
course within the window `--for` in a few wall seconds. On the wall clock none of these
would happen within the time these tests take (the progress deadline alone is 600 s)."""

from __future__ import annotations

from pathlib import Path

from gitkrm.agent.simulate import open_twin
from gitkrm.controllers.cronjob import SCHEDULED_AT
from gitkrm.health import Health
from gitkrm.krm import GVK
from gitkrm.source import Source
from gitkrm.sync import live
from tests.agent.simulate.test_twin import (
    by_name,
    feature,
    feature_source,
    opened,
    repo,
    run_simulation,
)
from tests.source.source_gitrepo import RemoteRepo
from tests.support.simulation import app

__all__ = ["opened", "repo"]  # fixtures

STUCK = app("stuck", replicas=2, node_selector="disktype: ssd")  # no node has that label
JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: report, namespace: default}
spec:
  activeDeadlineSeconds: 120
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {disktype: ssd}
      containers: [{name: r, image: "busybox:1.36"}]
"""
CRON = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick, namespace: default}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: t, image: "busybox:1.36"}]
"""
JOB_GVK = GVK(group="batch", version="v1", kind="Job")


def branch(repo: RemoteRepo, files: dict[str, str]) -> None:
    repo.write("keep.yaml", app("keep", replicas=1))
    repo.commit("main")
    repo.push()
    feature(repo, files)


async def test_a_rollout_that_never_becomes_ready_fails_its_progress_deadline(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    branch(repo, {"stuck.yaml": STUCK})
    sim = await run_simulation(repo, tmp_path / "state", opened, tmp_path, budget=900.0)
    assert by_name(sim)["Deployment/stuck"] == (
        "created",
        Health.FAILED,
        "ProgressDeadlineExceeded",
    )
    assert by_name(sim)["Deployment/keep"][1] is Health.CURRENT
    assert sim.simulated == 900.0
    assert sim.elapsed < 60  # fifteen simulated minutes, in seconds of wall time
    # a window shorter than the deadline: still in progress when it ends
    short = await run_simulation(repo, tmp_path / "state", opened, tmp_path, budget=300.0)
    assert by_name(short)["Deployment/stuck"][1] is Health.IN_PROGRESS


async def test_a_job_past_its_active_deadline_fails(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    branch(repo, {"job.yaml": JOB})
    sim = await run_simulation(repo, tmp_path / "state", opened, tmp_path, budget=600.0)
    action, health, _ = by_name(sim)["Job/report"]
    assert (action, health) == ("created", Health.FAILED)
    assert sim.elapsed < 60


async def test_a_cronjob_fires_on_its_schedule_within_the_window(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    branch(repo, {"cron.yaml": CRON})
    source = await feature_source(repo, opened, tmp_path)
    start = 1_800_000_000.0 + 10  # 10 s past a five-minute boundary
    async with open_twin(
        live_store=None, budget=900.0, workdir=tmp_path, clock_start=start
    ) as twin:
        await twin.apply(source)
        sim = await twin.finish()
        jobs = await live.list_all(twin.store, JOB_GVK)
    assert sim.simulated == 900.0
    # due at +290 s, +590 s and +890 s: three runs, each completed (its pod ran 1 s)
    scheduled = sorted(j["metadata"]["annotations"][SCHEDULED_AT] for j in jobs)
    assert scheduled == [
        "2027-01-15T08:05:00Z",
        "2027-01-15T08:10:00Z",
        "2027-01-15T08:15:00Z",
    ]
    assert all(
        any(c.get("type") == "Complete" for c in (j.get("status") or {}).get("conditions", []))
        for j in jobs
    )
    assert by_name(sim)["CronJob/tick"][1] is Health.CURRENT
