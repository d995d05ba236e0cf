"""One timed `gitkrm run --once --wait` as a whole process (start-up included): what the
source-tree benchmarks (Flux, Argo CD, Helm releases) measure each sync with; first syncs
and resyncs of several cases, and their figures beside a baseline of the same run."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

GITKRM: Final = str(Path(sys.executable).with_name("gitkrm"))


def timed_run(url: str, state: Path, *extra: str) -> float:
    """Seconds of `gitkrm run --repo URL --once --wait` into `state`; exits on a failure."""
    start = time.perf_counter()
    done = subprocess.run(
        [GITKRM, "run", "--repo", url, "--once", "--wait", "--timeout", "120s",
         "--state", str(state), *extra],
        capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"gitkrm run {' '.join(extra)}: exit {done.returncode}\n{done.stderr}")
    return seconds


def first_and_again(
    root: Path, cases: Mapping[str, tuple[str, ...]], runs: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per case (`(url, *extra)`), `runs` first syncs into fresh state dirs
    (root/state-CASE-N) and a resync of each: their seconds, by case."""
    first: dict[str, list[float]] = {k: [] for k in cases}
    again: dict[str, list[float]] = {k: [] for k in cases}
    for i in range(runs):
        for kind, (url, *extra) in cases.items():
            state = root / f"state-{kind}-{i}"
            first[kind].append(timed_run(url, state, *extra))
            again[kind].append(timed_run(url, state, *extra))
    return first, again


def after_edits(
    root: Path, cases: Mapping[str, tuple[str, ...]], runs: int, edit: Callable[[int], None]
) -> dict[str, list[float]]:
    """Per case, the seconds of a sync into root/state-CASE-0 after each of `runs` calls of
    `edit` (given the run's number), which commits a change to the cases' repository."""
    edited: dict[str, list[float]] = {k: [] for k in cases}
    for i in range(runs):
        edit(i)
        for kind, (url, *extra) in cases.items():
            edited[kind].append(timed_run(url, root / f"state-{kind}-0", *extra))
    return edited


def print_ratio(figure: str, got: list[float], base: list[float], *, baseline: str) -> None:
    """One figure: the median of `got` beside the median of `base` (the `baseline`, measured
    in the same run) and their ratio."""
    g, b = statistics.median(got), statistics.median(base)
    print(
        f"{figure:<33} {g:>8.3f} s  (median of {len(got)}; {baseline} {b:.3f} s, {g / b:.1f}x)",
        flush=True,
    )
