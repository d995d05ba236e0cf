"""W10k manifest parsing: plain libyaml `CSafeLoader` against gitkrm's `load_manifests`.

`load_manifests` adds kubectl's scalar rules, duplicate-key and alias checks and line
numbers; the target is to stay within about 20% of the plain loader (the design puts
the plain loader at 1.0-1.2 s for the 10,000 documents on a 2-core machine).
Runs are interleaved and the median of each is reported, so machine noise hits both.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import yaml

from benchmarks.workload import APPS, app_yaml, deployment, objects
from gitkrm.krm.yamlio import dump_yaml, load_manifests

RUNS = 5


def _files() -> list[tuple[str, bytes]]:
    return [(f"apps/app-{i}.yaml", app_yaml(i).encode()) for i in range(APPS)]


def _baseline(files: list[tuple[str, bytes]]) -> int:
    n = 0
    for _path, data in files:
        for _doc in yaml.load_all(data, Loader=yaml.CSafeLoader):
            n += 1
    return n


def _ours(files: list[tuple[str, bytes]]) -> int:
    n = 0
    for path, data in files:
        n += len(load_manifests(data, path=path))
    return n


def _time(fn: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    count = fn()
    return time.perf_counter() - start, count


def main() -> None:
    files = _files()
    assert load_manifests(files[3][1], path=files[3][0])[0].obj == deployment(3)
    base_times: list[float] = []
    our_times: list[float] = []
    docs = 0
    for _ in range(RUNS):
        t, docs = _time(lambda: _baseline(files))
        base_times.append(t)
        t, ours_docs = _time(lambda: _ours(files))
        our_times.append(t)
        assert ours_docs == docs
    base = statistics.median(base_times)
    ours = statistics.median(our_times)
    print(f"yaml.w10k_csafeloader_baseline  {docs / base:>10,.0f} docs/s  ({base:.3f} s)")
    print(
        f"yaml.w10k_load_manifests        {docs / ours:>10,.0f} docs/s  ({ours:.3f} s, "
        f"target <= 1.3 s)"
    )
    print(f"yaml.w10k_ratio                 {ours / base:>10.2f} x baseline  (target <= 1.2)")

    objs = objects(APPS // 5)
    dump_times = [_time(lambda: len(dump_yaml(objs)))[0] for _ in range(3)]
    dump = statistics.median(dump_times)
    print(f"yaml.dump_kubectl_style         {len(objs) / dump:>10,.0f} objects/s")


if __name__ == "__main__":
    main()
