"""Sync engine figures on W10k (issue 4, "Performance"), medians of several runs.

The W10k tree is written into a temporary Git repository, committed and pushed to a bare
repository that a GitSource clones; each run syncs into a new store file, as the agent
keeps it. The engine figures are `SyncEngine.sync` on the fetched snapshot (the Git
figures are in bench_source); the end-to-end ones add the source's fetch.

- sync.cold_w10k: empty store to W10k applied (<= 2.0 s), and its ratio to the plain
  C YAML loader (`yaml.load_all`, CSafeLoader) reading the same files (<= 2x);
- sync.resync_unchanged: the same revision again, nothing changed (<= 0.1 s);
- sync.one_file_commit: a commit that changes one file, applied (<= 0.2 s);
- sync.peak_rss: the benchmark process, and its parse workers (<= 400 MB);
- sync.ss_*: the same cold sync and quiet re-sync with `--apply-mode server-side` (apply
  patches, managedFields), next to client-side figures measured alongside, and a re-sync by
  a new engine (every object read and compared: a restarted agent), in both modes.
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.gitrepo import git, make_repo
from benchmarks.workload import APPS, app_yaml
from gitkrm.source import GitSource, GitSourceSpec, Snapshot
from gitkrm.store.sqlite import SqliteStore
from gitkrm.sync import pool
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.parse import ParseContext
from gitkrm.sync.render import Renderer
from gitkrm.sync.results import SyncResult

RUNS = 5
OPTIONS = SyncOptions(source_name="bench", agent_name="bench")


def _commit_one(work: Path, bare: Path, n: int) -> None:
    i = 7 + n
    (work / "apps" / f"app-{i}.yaml").write_text(app_yaml(i).replace("replicas: 3", "replicas: 4"))
    git("commit", "-q", "-am", f"scale app-{i}", cwd=work)
    git("push", "-q", str(bare), "HEAD:refs/heads/main", cwd=work)


def _baseline(contents: list[bytes]) -> float:
    start = time.perf_counter()
    for data in contents:
        for _doc in yaml.load_all(data, Loader=yaml.CSafeLoader):
            pass
    return time.perf_counter() - start


def _check(result: SyncResult, *, created: int = 0, configured: int = 0) -> None:
    if not result.ok:
        raise SystemExit(f"sync failed: {result.problems()[:5]}")
    if result.counts["created"] != created or result.counts["configured"] != configured:
        raise SystemExit(f"unexpected counts: {dict(result.counts)}")


def _line(name: str, value: str, note: str) -> None:
    print(f"sync.{name:<30} {value:>14}  ({note})", flush=True)


async def _timed_sync(engine: SyncEngine, snap: Snapshot) -> tuple[float, SyncResult]:
    start = time.perf_counter()
    result = await engine.sync(snap)
    return time.perf_counter() - start, result


async def _render_figures(snap: Snapshot) -> tuple[float, float]:
    """A cold render (parse, prepare, admit) of W10k inline and on the worker pool."""
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(3):
        for parallel in (False, True):
            saved = pool.PARALLEL_MIN_BYTES
            pool.PARALLEL_MIN_BYTES = 0 if parallel else 1 << 62
            try:
                renderer = Renderer(
                    context=ParseContext(source="bench", default_namespace="default")
                )
                start = time.perf_counter()
                result = await renderer.render(snap, namespaces=set())
                times[parallel].append(time.perf_counter() - start)
            finally:
                pool.PARALLEL_MIN_BYTES = saved
            if not result.ok:
                raise SystemExit(f"render failed: {result.problems[:3]}")
    return statistics.median(times[False]), statistics.median(times[True])


async def _run(root: Path) -> None:
    work, bare = make_repo(root)
    source = GitSource(GitSourceSpec(name="bench", url=str(bare)), cache_dir=root / "cache")
    snap = await source.snapshot()
    contents = list(snap.read_many(snap.files).values())
    objects = 2 * APPS + 20
    cold: list[float] = []
    phases: dict[str, list[float]] = {}
    base: list[float] = []
    resync: list[float] = []
    resync_first: list[float] = []
    resync_poll: list[float] = []
    one_file: list[float] = []
    one_file_fetch: list[float] = []
    first = 0.0
    for run in range(RUNS):
        base.append(_baseline(contents))
        store = SqliteStore.open(str(root / f"store-{run}.db"))
        engine = SyncEngine(store=store, options=OPTIONS)
        seconds, result = await _timed_sync(engine, snap)
        _check(result, created=objects)
        cold.append(seconds)
        for phase, ms in result.timings_ms.items():
            phases.setdefault(phase, []).append(ms)
        if run == 0:
            first = seconds
        # The first re-sync after a cold one also takes in the cold sync's own events into
        # the watch cache (drift detection's informers): reported apart.
        seconds, result = await _timed_sync(engine, snap)
        _check(result)
        resync_first.append(seconds)
        for _ in range(2):
            seconds, result = await _timed_sync(engine, snap)
            _check(result)
            resync.append(seconds)
            start = time.perf_counter()
            again = await source.snapshot()
            _check(await engine.sync(again))
            resync_poll.append(time.perf_counter() - start)
        _commit_one(work, bare, run)
        start = time.perf_counter()
        snap2 = await source.snapshot()
        fetched = time.perf_counter() - start
        seconds, result = await _timed_sync(engine, snap2)
        _check(result, configured=1)
        one_file.append(seconds)
        one_file_fetch.append(fetched + seconds)
        await engine.close()
        await store.close()
        snap = snap2
    inline, pooled = await _render_figures(snap)
    await source.close()
    median_cold = statistics.median(cold)
    median_base = statistics.median(base)
    _line(
        "cold_w10k",
        f"{median_cold:.3f} s",
        f"median of {RUNS}, target <= 2.0 s; first run {first:.3f} s",
    )
    _line(
        "yaml_csafeloader_baseline",
        f"{median_base:.3f} s",
        f"yaml.load_all over the same {len(contents)} files",
    )
    breakdown = ", ".join(f"{k} {statistics.median(v):,.0f}" for k, v in phases.items())
    _line("cold_breakdown", "ms", breakdown)
    _line("cold_ratio", f"{median_cold / median_base:.2f} x", "cold sync / C loader, target <= 2x")
    _line("render_cold_inline", f"{inline:.3f} s", "one core")
    _line("render_cold_pool", f"{pooled:.3f} s", f"{pool.worker_count()} worker processes")
    _line("resync_unchanged", f"{statistics.median(resync) * 1000:.1f} ms", "target <= 100 ms")
    _line(
        "resync_first",
        f"{statistics.median(resync_first) * 1000:.1f} ms",
        "the first re-sync after a cold one: the watch cache takes in its events",
    )
    _line("resync_with_poll", f"{statistics.median(resync_poll) * 1000:.1f} ms", "ls-remote + sync")
    _line("one_file_commit", f"{statistics.median(one_file) * 1000:.1f} ms", "target <= 200 ms")
    _line(
        "one_file_with_fetch", f"{statistics.median(one_file_fetch) * 1000:.1f} ms", "fetch + sync"
    )
    self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    _line(
        "peak_rss", f"{self_mb:.0f} MB", f"target <= 400 MB; largest child process {kids_mb:.0f} MB"
    )


SERVER_SIDE = SyncOptions(source_name="bench", agent_name="bench", apply_mode="server-side")


async def _run_modes(root: Path) -> None:
    """Client-side and server-side apply, alternated run by run on the same snapshot."""
    _, bare = make_repo(root)
    source = GitSource(GitSourceSpec(name="bench", url=str(bare)), cache_dir=root / "cache")
    snap = await source.snapshot()
    objects = 2 * APPS + 20
    figures: dict[tuple[str, str], list[float]] = {}
    for run in range(RUNS):
        for mode, options in (("cs", OPTIONS), ("ss", SERVER_SIDE)):
            store = SqliteStore.open(str(root / f"{mode}-{run}.db"))
            engine = SyncEngine(store=store, options=options)
            seconds, result = await _timed_sync(engine, snap)
            _check(result, created=objects)
            figures.setdefault((mode, "cold"), []).append(seconds)
            _check((await _timed_sync(engine, snap))[1])  # the watch cache takes in the events
            seconds, result = await _timed_sync(engine, snap)
            _check(result)
            figures.setdefault((mode, "resync"), []).append(seconds)
            fresh = SyncEngine(store=store, options=options)
            seconds, result = await _timed_sync(fresh, snap)
            _check(result)
            figures.setdefault((mode, "fresh"), []).append(seconds)
            await fresh.close()
            await engine.close()
            await store.close()
    await source.close()

    def med(mode: str, what: str) -> float:
        return statistics.median(figures[(mode, what)])

    cs_note = f"median of {RUNS}; client-side in the same runs"
    _line(
        "ss_cold_w10k",
        f"{med('ss', 'cold'):.3f} s",
        f"{cs_note} {med('cs', 'cold'):.3f} s",
    )
    _line(
        "ss_resync_unchanged",
        f"{med('ss', 'resync') * 1000:.1f} ms",
        f"{cs_note} {med('cs', 'resync') * 1000:.1f} ms",
    )
    _line(
        "ss_resync_new_engine",
        f"{med('ss', 'fresh'):.3f} s",
        f"all read and applied locally; {cs_note} {med('cs', 'fresh'):.3f} s",
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-sync-") as tmp:
        asyncio.run(_run(Path(tmp)))
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-sync-modes-") as tmp:
        asyncio.run(_run_modes(Path(tmp)))


if __name__ == "__main__":
    main()
