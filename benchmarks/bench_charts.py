"""Helm charts synced by the engine in-process (SQLite store), against the same objects as
plain manifests measured in the same run (the baseline):

- cold: 200 releases of a podinfo-sized chart (benchmarks/charts/web: Deployment, Service,
  ConfigMap, HPA, ServiceAccount), each with its own values, into an empty store (floor
  1.5 s), and the 1,000 objects they render as plain files;
- first re-sync / unchanged: the same revision synced again: the first re-sync, and the
  median of five more (floor 0.05 s each);
- bump: one release's chart version bumped in a new commit, applied (floor 0.2 s);
- restart: a new engine on the same state dir syncs the same revision (renders come from
  the state dir: nothing is rendered again).
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import yaml

from benchmarks.gitrepo import git, publish
from gitkrm.source import GitSource, GitSourceSpec
from gitkrm.store.sqlite import SqliteStore
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.parsecache import ParseCache

RELEASES = 200
RUNS = 3
CHART = Path(__file__).parent / "charts" / "web"
FLOORS = {"cold": 1.5, "first re-sync": 0.05, "unchanged": 0.05, "bump": 0.2}


def _values(i: int) -> str:
    """The chart's values.yaml with this release's own replicas, message and CPU target."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    values["replicaCount"] = 1 + i % 3
    values["message"] = f"hello from release {i}"
    values["hpa"]["cpu"] = 50 + i % 40
    return yaml.safe_dump(values, sort_keys=False)


def _repo(root: Path) -> tuple[Path, Path]:
    work = root / "work"
    for i in range(RELEASES):
        d = work / "releases" / f"web-{i:03d}"
        shutil.copytree(CHART, d)
        (d / "values.yaml").write_text(_values(i))
    return work, publish(work, root, "200 releases")


def _engine(store: SqliteStore, state: Path | None) -> SyncEngine:
    cache = None if state is None else ParseCache(state / "cache" / "parsed" / "bench.bin")
    return SyncEngine(
        store=store,
        options=SyncOptions(source_name="bench", agent_name="bench"),
        parse_cache=cache,
    )


async def _timed(step: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await step()
    return time.perf_counter() - start


async def _run(root: Path) -> dict[str, float]:
    work, bare = _repo(root)
    source = GitSource(GitSourceSpec(name="bench", url=str(bare)), cache_dir=root / "git")
    store = SqliteStore.open(str(root / "store.db"))
    state = root / "state"
    engine = _engine(store, state)
    out: dict[str, float] = {}
    try:
        snap = await source.snapshot()
        start = time.perf_counter()
        result = await engine.sync(snap)
        out["cold"] = time.perf_counter() - start
        if not result.ok or result.counts.created != RELEASES * 5:
            raise SystemExit(f"cold sync: {result.counts} {result.problems()[:3]}")
        # Re-syncs with nothing changed (what an agent does at every interval): the first one
        # (it reads the store once more to confirm) and the median of the next five.
        out["first re-sync"] = await _timed(lambda: engine.sync(snap))
        out["unchanged"] = statistics.median(
            [await _timed(lambda: engine.sync(snap)) for _ in range(5)]
        )
        chart = work / "releases" / "web-007" / "Chart.yaml"
        chart.write_text(chart.read_text().replace("version: 1.0.0", "version: 1.0.1"))
        git("commit", "-q", "-am", "bump web-007", cwd=work)
        git("push", "-q", str(bare), "HEAD:refs/heads/main", cwd=work)
        await source.poll()
        bumped = await source.snapshot()
        start = time.perf_counter()
        result = await engine.sync(bumped)
        out["bump"] = time.perf_counter() - start
        if not result.ok or result.counts.configured != 5:
            raise SystemExit(f"bump: {result.counts} {result.problems()[:3]}")
        await engine.close()
        engine = _engine(store, state)  # a restart: renders come from the state dir
        out["restart"] = await _timed(lambda: engine.sync(bumped))
        # The baseline: the same objects as plain manifests, into an empty store.
        plain = root / "plain"
        for d in sorted((work / "releases").iterdir()):
            (plain / d.name).mkdir(parents=True)
        await engine.close()
        out["plain"] = await _plain_baseline(root, result_dir=plain)
    finally:
        await engine.close()
        await store.close()
        await source.close()
    return out


def _write_rendered(root: Path, result_dir: Path) -> None:
    """What the charts render, written as plain files (the baseline's repository)."""
    from gitkrm.charts.model import Capabilities
    from gitkrm.charts.release import ChartRenderer

    renderer = ChartRenderer()
    for d in sorted(result_dir.iterdir()):
        src = root / "work" / "releases" / d.name
        files = {
            p.relative_to(src).as_posix(): p.read_bytes() for p in src.rglob("*") if p.is_file()
        }
        rendered = renderer.render(
            directory=d.name, digest=d.name, read=functools.partial(dict, files),
            capabilities=Capabilities(),
        )  # fmt: skip
        for path, text in rendered.manifests:
            (result_dir / path.replace("/", "_")).write_bytes(text)


async def _plain_baseline(root: Path, *, result_dir: Path) -> float:
    """The same objects as plain files, synced cold into an empty store."""
    from gitkrm.source import LocalSource

    _write_rendered(root, result_dir)
    store = SqliteStore.open(str(root / "plain.db"))
    engine = _engine(store, None)
    source = LocalSource(name="plain", root=result_dir)
    try:
        snap = await source.snapshot()
        start = time.perf_counter()
        result = await engine.sync(snap)
        seconds = time.perf_counter() - start
        if not result.ok:
            raise SystemExit(f"plain baseline: {result.problems()[:3]}")
    finally:
        await engine.close()
        await store.close()
        await source.close()
    return seconds


def main() -> None:
    runs: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-charts-") as tmp:
        for run in range(RUNS):
            for k, v in asyncio.run(_run(Path(tmp) / f"run-{run}")).items():
                runs.setdefault(k, []).append(v)
    med = {k: statistics.median(v) for k, v in runs.items()}
    base = med["plain"]
    for name in ("cold", "first re-sync", "unchanged", "bump", "restart", "plain"):
        floor = FLOORS.get(name)
        verdict = "" if floor is None else (" ok" if med[name] <= floor else " OVER THE FLOOR")
        target = f"floor {floor} s" if floor is not None else "no floor"
        print(
            f"charts.{name:<14} {med[name]:8.3f} s  {med[name] / base:5.2f}x the plain cold sync "
            f"({target}{verdict}; median of {RUNS})",
            flush=True,
        )


if __name__ == "__main__":
    main()
