"""Store figures (issue 2, "Performance"), measured on a store file as the agent uses it.

- store.batch_10k_creates: W10k's 5,000 Deployments and 5,000 Services in one batch,
  admission (validation, defaulting) included (target <= 0.5 s).
- store.single_creates: one acknowledged (committed) create at a time (>= 5,000/s).
- store.get: >= 20,000/s.
- store.list_10k_dicts / list_10k_raw: one kind with 10,000 objects, as dicts
  (<= 0.4 s) and as the serialized list body the HTTP API sends (<= 0.05 s).
- store.watch_p99: 100 watchers, 1,000 writes/s; time from a write's acknowledgement to
  its event reaching each watcher (p99 <= 10 ms).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from benchmarks.workload import deployment, namespace, objects
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store.protocol import BatchOp, BatchOpKind
from gitkrm.store.sqlite import SqliteStore

RUNS = 5
DEPLOYS = GVK(group="apps", version="v1", kind="Deployment")
CMS = GVK(group="", version="v1", kind="ConfigMap")


def _line(name: str, value: str, target: str) -> None:
    print(f"{name:<36} {value:>18}  ({target})", flush=True)


async def _median(run: Callable[[], Awaitable[float]], runs: int = RUNS) -> float:
    return statistics.median([await run() for _ in range(runs)])


class _Dirs:
    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="gitkrm-bench-")
        self._n = 0

    def db(self) -> str:
        self._n += 1
        return str(Path(self._tmp.name) / f"store-{self._n}.db")

    def cleanup(self) -> None:
        self._tmp.cleanup()


async def _store_with_namespaces(path: str) -> SqliteStore:
    store = SqliteStore.open(path)
    await store.batch([BatchOp(op=BatchOpKind.CREATE, obj=namespace(n)) for n in range(20)])
    return store


async def bench_batch(dirs: _Dirs) -> None:
    warm = await _store_with_namespaces(":memory:")  # load schemas once, as a running agent has
    await warm.batch([BatchOp(op=BatchOpKind.CREATE, obj=o) for o in objects(50)])
    await warm.close()

    async def run() -> float:
        store = await _store_with_namespaces(dirs.db())
        ops = [BatchOp(op=BatchOpKind.CREATE, obj=o) for o in objects()]
        gc.collect()
        start = time.perf_counter()
        await store.batch(ops)
        seconds = time.perf_counter() - start
        await store.close()
        return seconds

    seconds = await _median(run)
    _line("store.batch_10k_creates", f"{seconds:.3f} s", "target <= 0.5 s")


async def bench_single_and_get(dirs: _Dirs) -> None:
    count = 3000
    store = await _store_with_namespaces(dirs.db())
    bodies = [deployment(i) for i in range(count * RUNS)]

    async def creates() -> float:
        batch = [bodies.pop() for _ in range(count)]
        start = time.perf_counter()
        for body in batch:
            await store.create(body)
        return count / (time.perf_counter() - start)

    rate = await _median(creates)
    _line("store.single_creates", f"{rate:,.0f} /s", "target >= 5,000/s")
    refs = [
        ObjectRef(group="apps", kind="Deployment", namespace=f"team-{i % 20}", name=f"app-{i}")
        for i in range(count * RUNS - 1, count * RUNS - 1 - 20_000, -1)
        if i >= len(bodies)
    ]

    async def gets() -> float:
        start = time.perf_counter()
        for ref in refs:
            await store.get(ref)
        return len(refs) / (time.perf_counter() - start)

    rate = await _median(gets)
    _line("store.get", f"{rate:,.0f} /s", "target >= 20,000/s")
    await store.close()


async def bench_list(dirs: _Dirs) -> None:
    store = await _store_with_namespaces(dirs.db())
    await store.batch([BatchOp(op=BatchOpKind.CREATE, obj=deployment(i)) for i in range(10_000)])

    async def as_dicts() -> float:
        gc.collect()
        start = time.perf_counter()
        lst = await store.list(DEPLOYS)
        seconds = time.perf_counter() - start
        assert len(lst["items"]) == 10_000
        return seconds

    async def as_raw() -> float:
        start = time.perf_counter()
        body = await store.list_raw(DEPLOYS)
        seconds = time.perf_counter() - start
        assert body.startswith(b'{"apiVersion":"apps/v1","kind":"DeploymentList"')
        return seconds

    _line("store.list_10k_dicts", f"{await _median(as_dicts):.3f} s", "target <= 0.4 s")
    _line("store.list_10k_raw", f"{await _median(as_raw):.4f} s", "target <= 0.05 s")
    size = len(await store.list_raw(DEPLOYS)) / 10_000
    _line("store.deployment_bytes", f"{size:,.0f} B", "stored W10k Deployment, managedFields in")
    await store.close()


async def bench_watch(dirs: _Dirs) -> None:
    store = SqliteStore.open(dirs.db())
    watchers, rate, seconds = 100, 1000, 3.0
    acked: dict[str, float] = {}
    delays: list[float] = []
    total = int(rate * seconds)
    start_rv = str(store.resource_version)

    async def watcher() -> None:
        seen = 0
        async for ev in store.watch(CMS, resource_version=start_rv):
            now = time.perf_counter()
            delays.append(now - acked[ev.obj["metadata"]["resourceVersion"]])
            seen += 1
            if seen == total:
                return

    tasks = [asyncio.create_task(watcher()) for _ in range(watchers)]
    for _ in range(1000):  # until every watcher is live
        if store.watcher_count == watchers:
            break
        await asyncio.sleep(0.01)
    begin = time.perf_counter()
    for i in range(total):
        delay = begin + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        out = await store.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": {}}
        )
        acked[out["metadata"]["resourceVersion"]] = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*tasks), 60)
    delays.sort()
    p99 = delays[int(len(delays) * 0.99) - 1]
    p50 = delays[len(delays) // 2]
    _line("store.watch_p99", f"{p99 * 1000:.2f} ms", f"target <= 10 ms; p50 {p50 * 1000:.2f} ms")
    await store.close()


async def _main() -> None:
    dirs = _Dirs()
    try:
        await bench_batch(dirs)
        await bench_single_and_get(dirs)
        await bench_list(dirs)
        await bench_watch(dirs)
    finally:
        dirs.cleanup()


def main() -> None:
    asyncio.run(_main())


if __name__ == "__main__":
    main()
