"""`gitkrm plan` of a one-file change on W10k (issue #23: <= 1.5 s through the CLI, process
start included), beside `gitkrm diff` of the same change (the baseline, measured in the
same run) and the engine's preview in-process.

The W10k tree is synced once by `run --once` (which leaves the persisted parse cache in the
state dir); a branch `feature` then changes one Deployment's image. Each figure is the
median of RUNS processes:

- plan.one_file_change: `gitkrm plan --branch feature` (text), exit 1;
- plan.markdown: the same with `-o markdown`;
- plan.with_base: the same with `--base main` (the base rendered and compared too);
- plan.diff_baseline: `gitkrm diff --branch feature`;
- plan.engine_preview: a new `SyncEngine.preview` of the fetched revision, the parse cache
  read from the state dir, as the CLI does (no process start, no fetch).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.bench_cli import _gitkrm
from benchmarks.gitrepo import git, make_repo
from gitkrm.agent.state import parse_cache_file, store_url
from gitkrm.source import GitRef, GitSource, GitSourceSpec
from gitkrm.store import open_store
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.parsecache import ParseCache

RUNS = 5
TARGET = 1.5


def _feature(work: Path, bare: Path) -> None:
    """Branch `feature`: one Deployment's image changed (one file of 5,001)."""
    path = work / "apps" / "app-7.yaml"
    path.write_text(path.read_text().replace("image: nginx:1.7", "image: nginx:1.99"))
    git("checkout", "-q", "-b", "feature", cwd=work)
    git("commit", "-q", "-am", "app-7: nginx 1.99", cwd=work)
    git("push", "-q", str(bare), "HEAD:refs/heads/feature", cwd=work)


async def _engine_preview(root: Path, bare: Path, state: Path) -> float:
    spec = GitSourceSpec(name="bench", url=str(bare), ref=GitRef.from_flags(branch="feature"))
    source = GitSource(spec, cache_dir=root / f"cache-{time.monotonic_ns()}")
    snap = await source.snapshot()
    store = await open_store(store_url(state), read_only=True)
    cache = ParseCache(parse_cache_file(state, "bench"), read_only=True)
    engine = SyncEngine(
        store=store,
        options=SyncOptions(source_name="bench", agent_name="bench"),
        parse_cache=cache,
    )
    try:
        start = time.perf_counter()
        preview = await engine.preview(snap)
        seconds = time.perf_counter() - start
    finally:
        await engine.close()
        await store.close()
        await source.close()
    steps = [s for s in preview.plan.steps if s.op.value == "patch"]
    if len(steps) != 1 or preview.plan.errors:
        raise SystemExit(f"preview: {len(steps)} configured, {preview.plan.errors[:3]}")
    return seconds


def main() -> None:
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-plan-") as tmp:
        root = Path(tmp)
        work, bare = make_repo(root)
        state = root / "state"
        flags = ["--repo", str(bare), "--source-name", "bench", "--agent-name", "bench"]
        flags += ["--state", str(state)]
        _gitkrm("run", "--once", *flags, expect=0, says="10020 created")
        _feature(work, bare)
        feature = [*flags, "--branch", "feature"]
        for _ in range(RUNS):
            runs = {
                "plan": ("plan", *feature),
                "markdown": ("plan", "-o", "markdown", *feature),
                "base": ("plan", "--base", "main", *feature),
                "diff": ("diff", *feature),
            }
            for name, args in runs.items():
                says = "+        image: nginx:1.99"
                if name == "plan":
                    says = "plan: 1 to configure, 10019 unchanged"
                seconds = _gitkrm(*args, expect=1, says=says)
                figures.setdefault(name, []).append(seconds)
            seconds = asyncio.run(_engine_preview(root, bare, state))
            figures.setdefault("engine", []).append(seconds)

    def med(name: str) -> float:
        return statistics.median(figures[name])

    diff, engine = med("diff"), med("engine")

    def line(name: str, seconds: float, note: str) -> None:
        print(f"plan.{name:<22} {seconds:>8.3f} s  (median of {RUNS}, {note})", flush=True)

    plan = med("plan")
    verdict = "met" if plan <= TARGET else "MISSED"
    line(
        "one_file_change_w10k",
        plan,
        f"target <= {TARGET} s: {verdict}; {plan / diff:.2f}x diff, {plan / engine:.1f}x the "
        "engine's preview",
    )
    line("markdown", med("markdown"), f"{med('markdown') / diff:.2f}x diff")
    line("with_base", med("base"), f"--base main: {med('base') / diff:.2f}x diff")
    line("diff_baseline", diff, "gitkrm diff of the same change")
    line("engine_preview", engine, "SyncEngine.preview in-process, parse cache from the state")


if __name__ == "__main__":
    main()
