"""The corpus of public GitOps repositories (tests/corpus) through the command line: per
case, whole `gitkrm` processes (process start and imports included), medians of RUNS runs.

- first: `run --once` into an empty state dir (clone, render, apply, notes), beside the
  engine's cold sync of the same snapshot in-process;
- unchanged: `run --once` again with nothing changed (the record of the last sync answers);
- edited: `run --once` after the case's edit is committed and pushed (fetch, render,
  three-way patches);
- start: `gitkrm --help`, the floor of every command, measured in the same run.

An invalid case (it needs objects from elsewhere) is measured as the refused revision its
first sync is (exit 1), without re-syncs; a case the corpus test marks as failing today (an
xfail) is left out.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.bench_cli import UNCHANGED, _gitkrm
from benchmarks.gitrepo import git
from gitkrm.source import GitSource, GitSourceSpec
from gitkrm.store.sqlite import SqliteStore
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions
from tests.corpus.cases import CASES, Case

RUNS = 3


def _repo(case: Case, root: Path) -> tuple[Path, Path]:
    """The case's repository committed in `root/work` and pushed to `root/remote.git`."""
    work, bare = root / "work", root / "remote.git"
    case.copy_to(work)
    git("init", "-q", "--initial-branch=main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", case.repo, cwd=work)
    git("init", "-q", "--bare", str(bare), cwd=root)
    git("push", "-q", str(bare), "HEAD:refs/heads/main", cwd=work)
    return work, bare


async def _engine_cold(case: Case, bare: Path, root: Path) -> float:
    """The engine's cold sync of the case's snapshot in-process (fetch excluded)."""
    spec = GitSourceSpec(name="bench", url=str(bare), path=case.path)
    source = GitSource(spec, cache_dir=root / "engine-cache")
    snap = await source.snapshot()
    store = SqliteStore.open(str(root / f"engine-{time.monotonic_ns()}.db"))
    engine = SyncEngine(store=store, options=SyncOptions(source_name="bench", agent_name="bench"))
    try:
        start = time.perf_counter()
        result = await engine.sync(snap)
        seconds = time.perf_counter() - start
    finally:
        await engine.close()
        await store.close()
        await source.close()
    if result.ok == case.invalid:
        raise SystemExit(f"{case.id}: in-process sync ok={result.ok}: {result.problems()[:3]}")
    return seconds


def _measure(case: Case, root: Path) -> dict[str, list[float]]:
    fails = case.invalid
    figures: dict[str, list[float]] = {}
    for run in range(RUNS):
        here = root / f"run-{run}"
        work, bare = _repo(case, here)
        flags = ["--repo", str(bare), "--path", case.path, "--agent-name", "bench"]
        flags += ["--state", str(here / "state")]
        figures.setdefault("start", []).append(_gitkrm("--help"))
        first = _gitkrm("run", "--once", *flags, expect=1 if fails else 0)
        figures.setdefault("first", []).append(first)
        engine = asyncio.run(_engine_cold(case, bare, here))
        figures.setdefault("engine", []).append(engine)
        if fails or case.edit is None:
            continue
        unchanged = _gitkrm("run", "--once", *flags, says=UNCHANGED)
        figures.setdefault("unchanged", []).append(unchanged)
        case.edit.apply(work)
        git("commit", "-q", "-am", "edit", cwd=work)
        git("push", "-q", str(bare), "HEAD:refs/heads/main", cwd=work)
        figures.setdefault("edited", []).append(_gitkrm("run", "--once", *flags))
    return figures


def main() -> None:
    w = max(len(c.id) for c in CASES) + 2
    print(
        f"{'corpus case':<{w}}{'first':>8}{'engine':>8}{'unchanged':>11}{'edited':>8}"
        f"{'start':>8}  (seconds, medians of {RUNS}; first/start ratio)",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-corpus-") as tmp:
        for case in CASES:
            if case.xfail is not None:
                print(f"{case.id:<{w}}left out: fails today ({case.xfail})", flush=True)
                continue
            figures = _measure(case, Path(tmp) / case.id)
            med = {k: statistics.median(v) for k, v in figures.items()}

            def cell(name: str, width: int, med: dict[str, float] = med) -> str:
                return f"{med[name]:>{width}.3f}" if name in med else f"{'-':>{width}}"

            note = f"{med['first'] / med['start']:.1f}x start"
            if case.invalid:
                note += "; refused (needs cert-manager's CRDs)"
            print(
                f"{case.id:<{w}}{cell('first', 8)}{cell('engine', 8)}{cell('unchanged', 11)}"
                f"{cell('edited', 8)}{cell('start', 8)}  {note}",
                flush=True,
            )


if __name__ == "__main__":
    main()
