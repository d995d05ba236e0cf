"""End-to-end figures through the command line on W10k ("The CLI path users meet first"):
whole `gitkrm` processes, process start and imports included, medians of several runs,
each beside the in-process figure measured in the same run and their ratio.

The W10k tree is committed and pushed to a bare repository (gitrepo.py); each run uses a new
state dir and agent name, as a user's first `run --once` does (reports into Git on, as by
default).

- cli.run_once_cold: `run --once` into an empty state dir: clone, parse, apply 10,020
  objects, status and notes (<= 2.5 s); beside `SyncEngine.sync` cold on a fetched snapshot;
- cli.run_once_unchanged: `run --once` again with nothing changed (<= 0.6 s); beside the
  engine's quiet re-sync (the long-lived agent's), and a new engine's (every object read and
  compared: what a new process paid before the record of the last sync);
- cli.diff_in_sync: `diff` right after (<= 0.8 s); beside a new engine's plan;
- cli.run_once_after_edit: `run --once` after an edit of one Deployment in the store: a
  full sync in a new process, its files parsed by an earlier one (no target); beside a new
  engine's re-sync;
- cli.validate: `validate` of the checkout (<= 1.5 s); beside `validate_tree` in-process;
- cli.process_start: `gitkrm --help`, the floor of every command.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_sync import OPTIONS, _check, _timed_sync
from benchmarks.gitrepo import make_repo
from benchmarks.workload import APPS
from gitkrm.agent.state import store_url
from gitkrm.krm import ObjectRef
from gitkrm.source import GitSource, GitSourceSpec
from gitkrm.store import open_store
from gitkrm.store.sqlite import SqliteStore
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.validate import validate_tree

RUNS = 3
OBJECTS = 2 * APPS + 20
GITKRM = str(Path(sys.executable).with_name("gitkrm"))
UNCHANGED = "in sync, nothing changed since the last sync"


def _line(name: str, cli: float, note: str, *, engine: float | None = None, what: str = "") -> None:
    if engine is not None:
        note += f"; {what or 'engine'} {engine:.3f} s in-process, {cli / engine:.1f}x"
    print(f"cli.{name:<30} {cli:>12.3f} s  (median of {RUNS}, {note})", flush=True)


def _gitkrm(*args: str, expect: int = 0, says: str = "") -> float:
    """One `gitkrm` process: its wall time (it must exit `expect` and print `says`)."""
    start = time.perf_counter()
    done = subprocess.run([GITKRM, *args], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != expect or says not in done.stdout + done.stderr:
        raise SystemExit(
            f"gitkrm {' '.join(args)}: exit {done.returncode}, expected {expect}"
            f"{f' saying {says!r}' if says else ''}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return seconds


async def _edit(state: str) -> None:
    """`kubectl scale` of one Deployment, as another writer of the store."""
    store = await open_store(store_url(Path(state)))
    try:
        ref = ObjectRef(
            group="apps", kind="Deployment", name="app-7", namespace="team-7", version="v1"
        )
        obj = await store.get(ref)
        obj["spec"]["replicas"] = 5
        await store.update(obj)
    finally:
        await store.close()


async def _engine_figures(root: Path, bare: Path, work: Path) -> dict[str, list[float]]:
    """The in-process figures of one run: cold sync, quiet re-sync, a new engine's re-sync
    and plan, validate_tree."""
    source = GitSource(GitSourceSpec(name="bench", url=str(bare)), cache_dir=root / "cache")
    snap = await source.snapshot()
    out: dict[str, list[float]] = {"resync": []}
    store = SqliteStore.open(str(root / f"engine-{time.monotonic_ns()}.db"))
    engine = SyncEngine(store=store, options=OPTIONS)
    seconds, result = await _timed_sync(engine, snap)
    _check(result, created=OBJECTS)
    out["cold"] = [seconds]
    for _ in range(2):  # as bench_sync measures it
        seconds, result = await _timed_sync(engine, snap)
        _check(result)
        out["resync"].append(seconds)
    fresh = SyncEngine(store=store, options=OPTIONS)
    seconds, result = await _timed_sync(fresh, snap)
    _check(result)
    out["fresh"] = [seconds]
    planner = SyncEngine(store=store, options=OPTIONS)
    start = time.perf_counter()
    plan = await planner.plan(snap)
    out["plan"] = [time.perf_counter() - start]
    if not plan.in_sync:
        raise SystemExit("the in-process plan is not in sync")
    for e in (engine, fresh, planner):
        await e.close()
    await store.close()
    await source.close()
    start = time.perf_counter()
    report = await validate_tree([work])
    out["validate"] = [time.perf_counter() - start]
    if not report.ok or report.objects != OBJECTS:
        raise SystemExit(f"validate_tree: {report.objects} objects, {report.problems[:3]}")
    return out


def main() -> None:
    figures: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        figures.setdefault(name, []).append(seconds)

    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-cli-") as tmp:
        root = Path(tmp)
        work, bare = make_repo(root)
        for run in range(RUNS):
            state = str(root / f"state-{run}")
            # An agent name per run: its reports into Git start afresh, as a first run's do.
            flags = ["--repo", str(bare), "--source-name", "bench", "--agent-name", f"bench{run}"]
            flags += ["--state", state]
            add("start", _gitkrm("--help"))
            add("cold", _gitkrm("run", "--once", *flags, says=f"{OBJECTS} created"))
            add("unchanged", _gitkrm("run", "--once", *flags, says=UNCHANGED))
            add("diff", _gitkrm("diff", *flags, says=UNCHANGED))
            asyncio.run(_edit(state))
            add("edited", _gitkrm("run", "--once", *flags, says="1 configured"))
            add("validate", _gitkrm("validate", str(work), says=f"{OBJECTS} object(s)"))
            for name, times in asyncio.run(_engine_figures(root, bare, work)).items():
                for seconds in times:
                    add(f"engine_{name}", seconds)

    def med(name: str) -> float:
        return statistics.median(figures[name])

    _line(
        "run_once_cold_w10k",
        med("cold"),
        "target <= 2.5 s",
        engine=med("engine_cold"),
        what="SyncEngine.sync cold",
    )
    _line(
        "run_once_unchanged",
        med("unchanged"),
        f"target <= 0.6 s; a new engine's re-sync {med('engine_fresh'):.3f} s",
        engine=med("engine_resync"),
        what="quiet re-sync",
    )
    _line(
        "diff_in_sync",
        med("diff"),
        "target <= 0.8 s",
        engine=med("engine_plan"),
        what="a new engine's plan",
    )
    _line(
        "run_once_after_edit",
        med("edited"),
        "no target",
        engine=med("engine_fresh"),
        what="a new engine's re-sync",
    )
    _line(
        "validate_w10k",
        med("validate"),
        "target <= 1.5 s",
        engine=med("engine_validate"),
        what="validate_tree",
    )
    _line("process_start", med("start"), "gitkrm --help: the floor of every command")


if __name__ == "__main__":
    main()
