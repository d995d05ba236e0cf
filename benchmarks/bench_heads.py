"""The cold W10k sync of two checkouts of gitkrm side by side, in one run (issue 17: a
repository without waves or hooks keeps its speed).

`python -m benchmarks.bench_heads --base DIR [--runs N]`: DIR is another checkout (a `git
worktree` of main, say). The W10k repository is made once; each run clones it into a new
cache and syncs it into a new store in a fresh process, alternating the two checkouts
(PYTHONPATH picks which gitkrm is imported), so both see the same machine load. Only
`SyncEngine.sync` is timed, on the wall clock and in CPU time of the syncing process (less
sensitive to other load on a shared machine; parse workers not counted). Prints the
medians and their ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.gitrepo import make_repo

_ONE = """
import asyncio, sys, time
from pathlib import Path
import gitkrm
from gitkrm.source import GitSource, GitSourceSpec
from gitkrm.store.sqlite import SqliteStore
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions

async def main(bare, root):
    source = GitSource(GitSourceSpec(name="bench", url=bare), cache_dir=Path(root) / "cache")
    snap = await source.snapshot()
    store = SqliteStore.open(str(Path(root) / "store.db"))
    engine = SyncEngine(store=store, options=SyncOptions(source_name="bench", agent_name="b"))
    start, cpu = time.perf_counter(), time.process_time()
    result = await engine.sync(snap)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert result.ok and result.counts["created"] == 10020, result.problems()[:3]
    await engine.close()
    await store.close()
    await source.close()
    print(seconds, cpu, gitkrm.__file__)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def _one(tree: Path, bare: Path, root: Path) -> tuple[float, float, str]:
    root.mkdir()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", _ONE, str(bare), str(root)],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), float(out[1]), out[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    trees = {"base": args.base.resolve(), "head": here}
    times: dict[str, list[float]] = {"base": [], "head": []}
    cpus: dict[str, list[float]] = {"base": [], "head": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _, bare = make_repo(root)
        for run in range(args.runs):
            for name in ("base", "head") if run % 2 == 0 else ("head", "base"):
                seconds, cpu, imported = _one(trees[name], bare, root / f"{name}-{run}")
                if not imported.startswith(str(trees[name])):
                    raise SystemExit(f"{name}: imported {imported}, not from {trees[name]}")
                times[name].append(seconds)
                cpus[name].append(cpu)
    for what, figures in (("wall", times), ("cpu", cpus)):
        base, head = statistics.median(figures["base"]), statistics.median(figures["head"])
        for name, med in (("base", base), ("head", head)):
            runs = " ".join(f"{t:.3f}" for t in figures[name])
            print(f"heads.cold_w10k.{what}.{name:<5} {med:8.3f} s  ({trees[name]}; runs {runs})")
        print(f"heads.cold_w10k.{what}.ratio {head / base:8.3f}    (head / base, medians)")


if __name__ == "__main__":
    main()
