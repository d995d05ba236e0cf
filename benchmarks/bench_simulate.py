"""`gitkrm plan --simulate` on a change to 100 Deployments of 3 replicas (issue #23 §3: a
verdict in <= 5 s), through the command line and in-process, each beside the plan without
the simulation measured in the same run, and their ratio.

The repository is W10k's layout with 100 apps (a Deployment of 3 replicas and a Service each,
20 namespaces), synced into a live store and settled (`run --once --wait`: 300 pods Running);
the branch `feature` changes the image of every Deployment, so the simulation rolls out 300
new pods and retires 300 old ones on the twin.

- simulate.cli_plan: `gitkrm plan --branch feature` (the baseline: process, fetch, render,
  plan);
- simulate.cli_simulate: the same with `--simulate` (<= 5 s), and the simulation's own
  elapsed time as it reports it;
- simulate.engine: `simulate()` in-process on a fetched snapshot (copy, sync, controllers,
  verdict), beside `SyncEngine.preview` of the same snapshot on the live store;
- simulate.cli_15m: `--simulate --for 15m` of the branch `stuck`, which also gives 10 of
  the Deployments a nodeSelector no node matches: fifteen simulated minutes (their
  progressDeadlineSeconds of 600 s passes: 10 Deployments Failed, ProgressDeadlineExceeded)
  in the wall time printed, beside the 60 s default window of `feature`.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.gitrepo import git, publish
from benchmarks.workload import write_tree
from gitkrm.agent.config import sync_options
from gitkrm.agent.config_flags import from_flags
from gitkrm.agent.simulate import SimSource, simulate
from gitkrm.agent.sources import open_source
from gitkrm.agent.state import STORE_FILE, store_url
from gitkrm.store import open_store
from gitkrm.sync.engine import SyncEngine

RUNS = 3
APPS = 100
STUCK = 10
TARGET = 5.0
AGENT = "bench"
GITKRM = str(Path(sys.executable).with_name("gitkrm"))


def _gitkrm(*args: str, expect: int) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([GITKRM, *args], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != expect:
        raise SystemExit(
            f"gitkrm {' '.join(args)}: exit {done.returncode}, expected {expect}:\n"
            f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return seconds, done.stdout


def _repo(root: Path) -> Path:
    """100 apps on main; `feature` changes every Deployment's image."""
    work = root / "work"
    write_tree(work, apps=APPS)
    bare = publish(work, root, "100 apps")
    git("checkout", "-q", "-b", "feature", cwd=work)
    for path in sorted((work / "apps").iterdir()):
        path.write_text(path.read_text().replace("image: nginx:1.", "image: nginx:2."))
    git("commit", "-q", "-am", "new images", cwd=work)
    git("push", "-q", str(bare), "HEAD:refs/heads/feature", cwd=work)
    git("checkout", "-q", "-b", "stuck", cwd=work)
    for path in sorted((work / "apps").iterdir())[:STUCK]:
        path.write_text(
            path.read_text().replace(
                "    spec:\n", "    spec:\n      nodeSelector: {disktype: ssd}\n", 1
            )
        )
    git("commit", "-q", "-am", "10 apps on nodes that do not exist", cwd=work)
    git("push", "-q", str(bare), "HEAD:refs/heads/stuck", cwd=work)
    return bare


def _line(name: str, seconds: float, note: str) -> None:
    print(f"simulate.{name:<22} {seconds:>9.3f} s  ({note})", flush=True)


async def _in_process(repo: Path, state: Path, tmp: Path) -> tuple[list[float], list[float]]:
    """`simulate()` and, as the baseline, the preview of the plan (medians of RUNS)."""
    config = from_flags(
        repo=str(repo), branch="feature", tag=None, commit=None, path=None,
        source_name="default", interval=None,
    )  # fmt: skip
    source = open_source(config, git_cache=tmp / "git")
    options = sync_options(config, agent_name=AGENT, apply_mode="client-side")
    sims: list[float] = []
    plans: list[float] = []
    try:
        snapshot = await source.snapshot()
        for _ in range(RUNS):
            store = await open_store(store_url(state), read_only=True)
            engine = SyncEngine(store=store, options=options)
            start = time.perf_counter()
            preview = await engine.preview(snapshot)
            plans.append(time.perf_counter() - start)
            await engine.close()
            await store.close()
            assert not preview.plan.errors, preview.plan.errors
            start = time.perf_counter()
            found = await simulate(
                live_store=state / STORE_FILE,
                sources=[SimSource(options=options, snapshot=snapshot)],
            )
            sims.append(time.perf_counter() - start)
            if not (found.ok and found.settled):
                raise SystemExit(f"the simulation predicted problems: {found}")
    finally:
        await source.close()
    return sims, plans


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-simulate-") as tmp_dir:
        tmp = Path(tmp_dir)
        repo = _repo(tmp)
        state = tmp / "state"
        flags = ["--repo", str(repo), "--agent-name", AGENT, "--state", str(state)]
        seconds, _ = _gitkrm("run", "--once", "--wait", "--timeout", "5m", *flags, expect=0)
        print(f"setup: {APPS} Deployments x 3 replicas synced and settled in {seconds:.1f} s")
        plan = [_gitkrm("plan", *flags, "--branch", "feature", expect=1)[0] for _ in range(RUNS)]
        cli: list[float] = []
        reported: list[float] = []
        reported_long: list[float] = []
        for _ in range(RUNS):
            seconds, out = _gitkrm(
                "plan", "-o", "json", *flags, "--branch", "feature", "--simulate", expect=1
            )
            sim = json.loads(out)["sources"][0]["simulation"]
            if sim["verdict"] != "ok" or not sim["settled"]:
                raise SystemExit(f"the simulation predicted problems: {sim}")
            cli.append(seconds)
            reported.append(sim["elapsedSeconds"])
        long: list[float] = []
        for _ in range(RUNS):
            seconds, out = _gitkrm(
                "plan", "-o", "json", *flags, "--branch", "stuck", "--simulate", "--for", "15m",
                expect=1,
            )  # fmt: skip
            sim = json.loads(out)["sources"][0]["simulation"]
            failed = [o for o in sim["objects"] if o["reason"] == "ProgressDeadlineExceeded"]
            if len(failed) != STUCK or sim["simulatedSeconds"] != 900:
                raise SystemExit(f"expected {STUCK} Deployments past their deadline: {sim}")
            long.append(seconds)
            reported_long.append(sim["elapsedSeconds"])
        sims, previews = asyncio.run(_in_process(repo, state, tmp))
    base = statistics.median(plan)
    _line("cli_plan", base, f"median of {RUNS}; the baseline: plan without --simulate")
    verdict = statistics.median(cli)
    ok = "ok" if verdict <= TARGET else "OVER"
    _line(
        "cli_simulate",
        verdict,
        f"median of {RUNS}; target <= {TARGET:.0f} s: {ok}; {verdict / base:.1f}x the plan; "
        f"the simulation itself {statistics.median(reported):.3f} s as it reports",
    )
    fifteen = statistics.median(long)
    _line(
        "cli_15m",
        fifteen,
        f"median of {RUNS}; 900 simulated s ({STUCK} Deployments past their 600 s deadline) "
        f"in {statistics.median(reported_long):.3f} wall s as the simulation reports: "
        f"{900 / statistics.median(reported_long):.0f}x real time; {fifteen / verdict:.1f}x "
        "the 60 s window of cli_simulate",
    )
    engine, preview = statistics.median(sims), statistics.median(previews)
    _line(
        "engine",
        engine,
        f"median of {RUNS}, in-process simulate(); preview of the plan {preview:.3f} s, "
        f"{engine / preview:.1f}x",
    )


if __name__ == "__main__":
    main()
