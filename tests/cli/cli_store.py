"""A state dir's store in CLI tests: populated for the read-only commands (`get`,
`status`), read back after a `run`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from gitkrm.agent import crd
from gitkrm.errors import NotFound
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store import open_store

SAMPLE = Path(__file__).resolve().parents[2] / "sample-repo"


def _docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def populate(state: Path, *, sources: list[dict[str, Any]] | None = None) -> None:
    """Sample-repo's namespaces, ConfigMap, Deployments, Queue CRD and Queues, plus GitSources
    (spec and status) when given."""

    state.mkdir(parents=True, exist_ok=True)

    async def go() -> None:
        store = await open_store("sqlite:///" + str(state / "store.db"))
        try:
            for rel in (
                "platform/namespaces.yaml",
                "platform/queue-crd.yaml",
                "apps/guestbook/config.yaml",
                "apps/guestbook/deployment.yaml",
                "apps/worker/queues.yaml",
            ):
                for doc in _docs(SAMPLE / rel):
                    await store.create(doc)
            if sources is not None:
                await crd.install(store)
                for s in sources:
                    status = s.pop("status", None)
                    obj = await store.create(s)
                    if status is not None:
                        await store.update_status({**obj, "status": status})
        finally:
            await store.close()

    asyncio.run(go())


def stored(
    state: Path, kind: str, name: str, namespace: str | None = "default", group: str = ""
) -> Obj | None:
    """The object in the state dir's store (opened read-only); None when there is none."""

    async def read() -> Obj | None:
        store = await open_store("sqlite:///" + str(state / "store.db"), read_only=True)
        try:
            return await store.get(
                ObjectRef(group=group, kind=kind, name=name, namespace=namespace)
            )
        except NotFound:
            return None
        finally:
            await store.close()

    return asyncio.run(read())
