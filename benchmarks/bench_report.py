"""Reporting W10k into Git: the note and the status file of a sync of 10,000 objects, and
what a health change that keeps the aggregate costs. Medians of several runs.

A bare remote with one commit per run is made in a temporary directory; a GitSource cache
is filled from it, and the reporter writes there (then pushes to the remote, as a figure
of its own). All Deployments are InProgress (so the note lists 5,000 objects) and all
Services Current: the largest note W10k gives while rolling out.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.gitrepo import git
from benchmarks.workload import objects
from gitkrm.health import Health, HealthResult
from gitkrm.krm import ObjectRef
from gitkrm.report import Reporter
from gitkrm.source import GitSource, GitSourceSpec
from gitkrm.sync.results import Action, ObjectResult, make_result

RUNS = 5
THROTTLE = 1.0


def _make_remote(root: Path, commits: int) -> tuple[Path, list[str]]:
    work, bare = root / "work", root / "remote.git"
    git("init", "-q", "--initial-branch=main", str(work), cwd=root)
    shas = []
    for i in range(commits):
        (work / "app.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n"
        )
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", f"commit {i}", cwd=work)
        shas.append(git("rev-parse", "HEAD", cwd=work))
    git("init", "-q", "--bare", str(bare), cwd=root)
    git("push", "-q", str(bare), "HEAD:refs/heads/main", cwd=work)
    return bare, shas


def _line(name: str, value: str, target: str) -> str:
    return f"report.{name:<34} {value:>14}  ({target})"


async def _run(root: Path) -> list[str]:
    bare, shas = _make_remote(root, RUNS + 1)
    source = GitSource(GitSourceSpec(name="default", url=str(bare)), cache_dir=root / "cache")
    await source.snapshot()
    refs = [ObjectRef.of(o) for o in objects()]
    health = {
        r: HealthResult(Health.IN_PROGRESS, "Available: 1/3", "LessAvailable")
        if r.kind == "Deployment"
        else HealthResult(Health.CURRENT, "Service is ready")
        for r in refs
    }
    write: list[float] = []
    call: list[float] = []
    push: list[float] = []
    for sha in shas[:RUNS]:
        result = make_result(revision=sha, objects=[ObjectResult(r, Action.CREATED) for r in refs])
        reporter = Reporter(agent_name="bench", throttle_s=THROTTLE)
        reporter.register("default", source)
        t0 = time.perf_counter()
        await reporter.record_sync(source_name="default", result=result, health=health)
        t1 = time.perf_counter()
        await reporter.settled()
        t2 = time.perf_counter()
        assert await reporter.flush(timeout=60)
        t3 = time.perf_counter()
        call.append(t1 - t0)
        write.append(t2 - t0)
        push.append(t3 - t2)
        await reporter.close()

    # A health change that keeps the aggregate (one Deployment of 5,000 turns Current).
    reporter = Reporter(agent_name="bench", throttle_s=THROTTLE)
    reporter.register("default", source)
    sha = shas[RUNS]
    result = make_result(revision=sha, objects=[ObjectResult(r, Action.CREATED) for r in refs])
    await reporter.record_sync(source_name="default", result=result, health=health)
    await reporter.settled()
    stats = reporter.stats("default")
    assert stats is not None
    before = (stats.note_writes, stats.status_writes)
    first = next(r for r in refs if r.kind == "Deployment")
    t0 = time.perf_counter()
    await reporter.record_health(
        source_name="default", revision=sha, health={first: HealthResult(Health.CURRENT, "ok")}
    )
    t1 = time.perf_counter()
    await reporter.settled()
    held = (stats.note_writes, stats.status_writes)
    early = sum(a - b for a, b in zip(held, before, strict=True))
    # Then the throttle lets it through: exactly one more note and status file.
    await asyncio.wait_for(reporter.drained(), THROTTLE * 10)
    waited = time.perf_counter() - t0
    later = sum(a - b for a, b in zip((stats.note_writes, stats.status_writes), held, strict=True))
    await reporter.close()
    await source.close()

    med = statistics.median
    return [
        _line(
            "note_and_status_w10k",
            f"{med(write) * 1000:,.1f} ms",
            "median of 5, target <= 1,000 ms",
        ),
        _line(
            "record_sync_call_w10k", f"{med(call) * 1000:,.2f} ms", "returns before any Git work"
        ),
        _line("push_w10k_local_remote", f"{med(push) * 1000:,.1f} ms", "median of 5, no target"),
        _line("record_health_call_w10k", f"{(t1 - t0) * 1000:,.2f} ms", "one verdict of 10,000"),
        _line("same_aggregate_writes_in_window", f"{early} writes", "target 0 until the throttle"),
        _line(
            "same_aggregate_writes_after",
            f"{later} writes",
            f"target 2 (note + status) after the {THROTTLE:g} s throttle; "
            f"came after {waited:.2f} s",
        ),
    ]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-report-") as tmp:
        for line in asyncio.run(_run(Path(tmp))):
            print(line, flush=True)


if __name__ == "__main__":
    main()
