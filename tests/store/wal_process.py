"""A writer process whose WAL restarts every few dozen writes (run by test_sqlite_db.py).

python wal_process.py DB PREFIX   write in a loop, print "<rv> <name> <value>" after every
                                  acknowledged write
"""

from __future__ import annotations

import asyncio
import sys

from gitkrm.krm import ObjectRef
from gitkrm.store.sqlite import SqliteStore, db


async def write(path: str, prefix: str) -> None:
    db.RESTART_FRAMES = 64
    db.CATCH_UP_FRAMES = 48
    db.CHECKPOINT_INTERVAL = 0.005
    store = SqliteStore.open(path)
    counter = ObjectRef(group="", kind="ConfigMap", namespace="default", name=f"{prefix}-n")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": counter.name}}
    await store.create({**body, "data": {"v": "0"}})
    i = 0
    while True:
        i += 1
        if i % 2:
            name = f"{prefix}-c{i}"
            out = await store.create(
                {**body, "metadata": {"name": name}, "data": {"v": str(i), "pad": "x" * 3000}}
            )
        else:
            cur = await store.get(counter)
            cur["data"] = {"v": str(i)}
            out = await store.update(cur)
            name = counter.name
        sys.stdout.write(f"{out['metadata']['resourceVersion']} {name} {i}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(write(sys.argv[1], sys.argv[2]))
