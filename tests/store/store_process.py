"""A separate gitkrm process using a store file (run by test_sqlite_process.py).

python store_process.py hold  DB          open as the writer, print "ready", wait
python store_process.py write DB PREFIX   write in a loop, print "<rv> <name> <value>"
                                          after every acknowledged write
python store_process.py read  DB RV N     read-only: watch ConfigMaps from RV until N
                                          were added, listing as it goes; print "ok"
"""

from __future__ import annotations

import asyncio
import sys

from gitkrm.krm import GVK, ObjectRef
from gitkrm.store.sqlite import SqliteStore

CMS = GVK(group="", version="v1", kind="ConfigMap")


def configmap(name: str, value: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"v": value},
    }


async def hold(path: str) -> None:
    store = SqliteStore.open(path)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await store.close()


def ack(rv: str, name: str, value: int) -> None:
    """One acknowledgement line, written with one call (a kill cannot split it mid-way
    through several writes; the test still drops an unterminated last line)."""
    sys.stdout.write(f"{rv} {name} {value}\n")
    sys.stdout.flush()


async def write(path: str, prefix: str) -> None:
    store = SqliteStore.open(path)
    counter = ObjectRef(group="", kind="ConfigMap", namespace="default", name=f"{prefix}-counter")
    out = await store.create(configmap(counter.name, "0"))
    ack(out["metadata"]["resourceVersion"], counter.name, 0)
    i = 0
    while True:
        i += 1
        if i % 2:
            name = f"{prefix}-c{i}"
            out = await store.create(configmap(name, str(i)))
        else:
            cur = await store.get(counter)
            cur["data"] = {"v": str(i)}
            out = await store.update(cur)
            name = counter.name
        ack(out["metadata"]["resourceVersion"], name, i)


async def read(path: str, rv: str, n: int) -> None:
    store = SqliteStore.open(path, read_only=True, poll_interval=0.02)
    seen: set[str] = set()
    last = int(rv)
    async for ev in store.watch(CMS, resource_version=rv):
        now = int(ev.obj["metadata"]["resourceVersion"])
        assert now > last, (now, last)
        last = now
        seen.add(ev.obj["metadata"]["name"])
        listed = await store.list(CMS)
        assert int(listed["metadata"]["resourceVersion"]) >= now
        if len(seen) >= n:
            break
    await store.close()
    print("ok", len(seen), flush=True)


def main() -> None:
    mode, path, *rest = sys.argv[1:]
    if mode == "hold":
        asyncio.run(hold(path))
    elif mode == "write":
        asyncio.run(write(path, rest[0]))
    else:
        asyncio.run(read(path, rest[0], int(rest[1])))


if __name__ == "__main__":
    main()
