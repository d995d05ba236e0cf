"""W10k as a Git source: clone into an empty cache, list and read every file, and the
no-change poll; the same for W10k as a plain directory. Medians of several runs.

The repository is made once per run in a temporary directory (write_tree, one commit,
pushed to a bare repository that the sources fetch from as a local path).
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.gitrepo import git, make_repo
from benchmarks.workload import app_yaml
from gitkrm.source import GitSource, GitSourceSpec, LocalSource

RUNS = 5


def _line(name: str, seconds: float, target: str = "") -> str:
    suffix = f", target {target}" if target else ""
    return f"source.{name:<28} {seconds * 1000:>9,.1f} ms  (median of {RUNS}{suffix})"


async def _git_figures(root: Path, work: Path, bare: Path) -> list[str]:
    clone: list[float] = []
    one_file: list[float] = []
    listing: list[float] = []
    read_all: list[float] = []
    poll: list[float] = []
    files = 0
    for i in range(RUNS):
        cache = root / f"cache-{i}"
        src = GitSource(GitSourceSpec(name="bench", url=str(bare)), cache_dir=cache)
        t = time.perf_counter()
        snap = await src.snapshot()
        clone.append(time.perf_counter() - t)
        await src.close()

        warm = GitSource(GitSourceSpec(name="bench", url=str(bare)), cache_dir=cache)
        t = time.perf_counter()
        snap = await warm.snapshot()  # a restart on a warm cache: ls-remote, ls-tree, ignore
        listing.append(time.perf_counter() - t)
        assert warm.git.calls["fetch"] == 0
        t = time.perf_counter()
        contents = snap.read_many(snap.files)
        read_all.append(time.perf_counter() - t)
        files = len(contents)
        t = time.perf_counter()
        assert await warm.snapshot() is snap
        poll.append(time.perf_counter() - t)

        (work / "apps" / "app-0.yaml").write_text(f"# run {i}\n" + app_yaml(0))
        git("commit", "-q", "-a", "-m", f"run {i}", cwd=work)
        git("push", "-q", str(bare), "HEAD:refs/heads/main", cwd=work)
        t = time.perf_counter()
        changed = await warm.snapshot()
        one_file.append(time.perf_counter() - t)
        assert changed.changed_paths(snap) == {"apps/app-0.yaml"}
        await warm.close()
        shutil.rmtree(cache)
    return [
        _line("git_clone_w10k", statistics.median(clone), "<= 350 ms"),
        _line("git_list_w10k_warm_cache", statistics.median(listing)),
        _line(f"git_read_all_{files}_files", statistics.median(read_all)),
        _line("git_no_change_poll", statistics.median(poll), "<= 100 ms"),
        _line("git_one_file_commit", statistics.median(one_file)),
    ]


async def _local_figures(work: Path) -> list[str]:
    shutil.rmtree(work / ".git")
    cold: list[float] = []
    unchanged: list[float] = []
    for _ in range(RUNS):
        src = LocalSource(name="bench", root=work)
        t = time.perf_counter()
        snap = await src.snapshot()
        cold.append(time.perf_counter() - t)
        t = time.perf_counter()
        assert await src.snapshot() is snap
        unchanged.append(time.perf_counter() - t)
        await src.close()
    return [
        _line("dir_snapshot_w10k_cold", statistics.median(cold)),
        _line("dir_snapshot_w10k_unchanged", statistics.median(unchanged)),
    ]


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="gitkrm-bench-source-"))
    try:
        work, bare = make_repo(root)
        for line in asyncio.run(_git_figures(root, work, bare)):
            print(line, flush=True)
        for line in asyncio.run(_local_figures(work)):
            print(line, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
