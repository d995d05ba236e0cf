"""A process running the ControllerManager against a store file (for the kill -9 test).

Usage: python -m tests.controllers.controller_process STORE [IMAGE]
With IMAGE, once the Deployment `web` is Available it is changed to that image (a rollout
starts). Prints `started` when the controllers run.
"""

from __future__ import annotations

import asyncio
import sys

from gitkrm.controllers import ControllerManager, ControllerOptions
from gitkrm.health import Health, health_of
from gitkrm.krm import ObjectRef
from gitkrm.store.sqlite import SqliteStore

WEB = ObjectRef(group="apps", kind="Deployment", name="web", namespace="default")


async def main(path: str, image: str | None) -> None:
    store = SqliteStore.open(path)
    options = ControllerOptions(pod_start_delay=0.3, lease_interval=1.0, resync_period=0)
    manager = ControllerManager(store=store, options=options)
    await manager.start()
    print("started", flush=True)
    if image is not None:
        while True:
            d = await store.get(WEB)
            if health_of(d).status is Health.CURRENT:
                break
            await asyncio.sleep(0.05)
        d["spec"]["template"]["spec"]["containers"][0]["image"] = image
        await store.update(d)
        print("rollout", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
