"""Server-side apply field management on W10k Deployments: managedFields on create (the
store runs it on every write; W10k's shape is compiled after two objects), the create walk
alone (an object of a shape not compiled), an update of one field, a server-side apply."""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable

from benchmarks.workload import deployment
from gitkrm.krm import GVK
from gitkrm.patch.fieldmanager import apply, managed_fields_for_update
from gitkrm.patch.fieldmanager.create import walk
from gitkrm.schema import ssa_type_for

N = 2000
RUNS = 5
NOW = "2024-01-01T00:00:00Z"


def _rate(fn: Callable[[], None], n: int) -> float:
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return n / statistics.median(times)


def main() -> None:
    typ = ssa_type_for(GVK(group="apps", version="v1", kind="Deployment"))
    objs = [deployment(i) for i in range(N)]

    def create() -> None:
        for o in objs:
            managed_fields_for_update(
                old=None,
                new=o,
                manager="m",
                api_version="apps/v1",
                subresource=None,
                typ=typ,
                now=NOW,
            )

    def create_walk() -> None:
        for o in objs:
            walk(typ, o)

    stored = []
    for o in objs:
        s = copy.deepcopy(o)
        s["metadata"]["managedFields"] = managed_fields_for_update(
            old=None,
            new=s,
            manager="m",
            api_version="apps/v1",
            subresource=None,
            typ=typ,
            now=NOW,
        )
        stored.append(s)
    updated = []
    for s in stored:
        u = {**s, "spec": {**s["spec"], "replicas": 5}}
        updated.append(u)

    def update() -> None:
        for s, u in zip(stored, updated, strict=True):
            managed_fields_for_update(
                old=s,
                new=u,
                manager="hpa",
                api_version="apps/v1",
                subresource=None,
                typ=typ,
                now=NOW,
            )

    def ssa() -> None:
        for s, o in zip(stored, objs, strict=True):
            apply(
                live=s,
                config=o,
                manager="gitkrm",
                api_version="apps/v1",
                force=True,
                typ=typ,
                now=NOW,
            )

    print(f"ssa.managed_create       {_rate(create, N):>10,.0f} objects/s  (target >= 100,000)")
    print(f"ssa.create_walk          {_rate(create_walk, N):>10,.0f} objects/s  (uncompiled)")
    print(f"ssa.managed_update       {_rate(update, N):>10,.0f} objects/s")
    print(f"ssa.apply                {_rate(ssa, N):>10,.0f} objects/s")


if __name__ == "__main__":
    main()
