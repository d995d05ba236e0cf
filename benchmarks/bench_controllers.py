"""Controller figures (issue 5, "Performance"), on a store file as the agent uses it.

- controllers.w10k_available: W10k (20 namespaces, 5,000 Deployments and 5,000 Services,
  written in one store.batch) from an empty store to every Deployment Available, i.e.
  15,000 pods scheduled and Ready (target <= 60 s).
- controllers.idle_cpu: CPU time of the process per second of wall time once everything has
  settled (target < 2% of a core).
- with `--events-baseline`: the same runs alternate with runs that record no Events
  (`record_events=False`), and the time and CPU are given as ratios to those (the cost of
  the ~35,000 Events W10k records: ScalingReplicaSet, SuccessfulCreate, Scheduled).

Usage: .venv/bin/python -m benchmarks.bench_controllers [--apps N] [--runs N] [--events-baseline]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.workload import APPS, NAMESPACES, namespace, objects
from gitkrm.controllers import ControllerManager, ControllerOptions
from gitkrm.krm import GVK
from gitkrm.store.protocol import BatchOp, BatchOpKind, EventType
from gitkrm.store.sqlite import SqliteStore

DEPLOYMENTS = GVK(group="apps", version="v1", kind="Deployment")
IDLE_SETTLE = 3.0
IDLE_MEASURE = 5.0


def _line(name: str, value: str, target: str) -> None:
    print(f"{name:<36} {value:>18}  ({target})", flush=True)


def _available(obj: dict[str, object]) -> bool:
    status = obj.get("status")
    if not isinstance(status, dict):
        return False
    for c in status.get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == "Available" and c.get("status") == "True":
            return status.get("availableReplicas") == 3
    return False


async def _run(
    path: str, apps: int, *, events: bool = True
) -> tuple[float, float, dict[str, float]]:
    store = SqliteStore.open(path)
    manager = ControllerManager(store=store, options=ControllerOptions(record_events=events))
    await manager.start()
    available: set[str] = set()
    done = asyncio.Event()

    async def follow() -> None:
        async for ev in store.watch(DEPLOYMENTS):
            name = f"{ev.obj['metadata'].get('namespace')}/{ev.obj['metadata']['name']}"
            if ev.type is not EventType.DELETED and _available(ev.obj):
                available.add(name)
            else:
                available.discard(name)
            if len(available) >= apps:
                done.set()
                return

    watcher = asyncio.create_task(follow())
    ops = [BatchOp(op=BatchOpKind.CREATE, obj=namespace(n)) for n in range(NAMESPACES)]
    ops += [BatchOp(op=BatchOpKind.CREATE, obj=o) for o in objects(apps)]
    start, cpu_start, loop_start = time.perf_counter(), time.process_time(), time.thread_time()
    await store.batch(ops)
    await done.wait()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    loop_cpu = time.thread_time() - loop_start
    await watcher
    await asyncio.sleep(IDLE_SETTLE)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(IDLE_MEASURE)
    idle = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    stats = {
        "writes": manager.writer.writes,
        "batches": manager.writer.batches,
        "revision": store.resource_version,
        "cpu": round(cpu, 1),
        "loop_cpu": round(loop_cpu, 1),
    }
    await manager.stop()
    await store.close()
    return elapsed, idle, stats


async def _main(apps: int, runs: int, baseline: bool) -> None:
    times, idles, cpus = [], [], []
    base_times, base_cpus = [], []
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-") as tmp:
        for i in range(runs):
            if baseline:
                gc.collect()
                elapsed, _, stats = await _run(str(Path(tmp) / f"base-{i}.db"), apps, events=False)
                base_times.append(elapsed)
                base_cpus.append(stats["cpu"])
                print(
                    f"  run {i + 1} without Events: {elapsed:.1f} s, CPU {stats['cpu']:.1f} s "
                    f"(revision {stats['revision']:,})",
                    flush=True,
                )
            gc.collect()
            elapsed, idle, stats = await _run(str(Path(tmp) / f"store-{i}.db"), apps)
            times.append(elapsed)
            idles.append(idle)
            cpus.append(stats["cpu"])
            print(
                f"  run {i + 1}: {elapsed:.1f} s, idle {idle * 100:.2f}% "
                f"({stats['writes']:,} controller writes in {stats['batches']:,} batches, "
                f"revision {stats['revision']:,}; CPU {stats['cpu']:.1f} s, of which the event "
                f"loop's thread {stats['loop_cpu']:.1f} s)",
                flush=True,
            )
    pods = apps * 3
    _line(
        "controllers.w10k_available",
        f"{statistics.median(times):.1f} s",
        f"{apps:,} Deployments, {pods:,} pods Ready; target <= 60 s",
    )
    _line(
        "controllers.idle_cpu",
        f"{statistics.median(idles) * 100:.2f} %",
        "of a core once settled; target < 2%",
    )
    if baseline:
        _line(
            "controllers.events_time_ratio",
            f"{statistics.median(times) / statistics.median(base_times):.3f}",
            "W10k with Events / without; target <= 1.10",
        )
        _line(
            "controllers.events_cpu_ratio",
            f"{statistics.median(cpus) / statistics.median(base_cpus):.3f}",
            "CPU with Events / without",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--apps", type=int, default=APPS)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--events-baseline",
        action="store_true",
        help="alternate with runs recording no Events and print the ratios",
    )
    args = parser.parse_args()
    asyncio.run(_main(args.apps, args.runs, args.events_baseline))


if __name__ == "__main__":
    main()
