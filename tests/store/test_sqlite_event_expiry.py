"""Event expiry in the SQLite store (kube-apiserver's --event-ttl), with the time given:
an Event goes `ttl` seconds after it was last observed, the oldest go beyond the limit,
and watchers see them deleted."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gitkrm.krm import GVK, Obj
from gitkrm.krm.clock import format_seconds
from gitkrm.store.protocol import EventType
from gitkrm.store.sqlite import SqliteStore

NOW = 1_800_000_000.0
CORE_EVENTS = GVK(group="", version="v1", kind="Event")
NEW_EVENTS = GVK(group="events.k8s.io", version="v1", kind="Event")


def core_event(name: str, **fields: object) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "R",
        "message": "m",
        **fields,
    }


def micro(seconds: float) -> str:
    return format_seconds(seconds).replace("Z", ".000000Z")


async def names(store: SqliteStore, gvk: GVK) -> list[str]:
    listed = await store.list(gvk, namespace="default")
    return sorted(o["metadata"]["name"] for o in listed["items"])


async def test_expired_and_surplus_events_are_deleted(tmp_path: Path) -> None:
    store = SqliteStore.open(str(tmp_path / "s.db"))
    try:
        await store.create(core_event("old", lastTimestamp=format_seconds(NOW - 7200)))
        await store.create(core_event("recent", lastTimestamp=format_seconds(NOW - 100)))
        # a repeat counted in its series is as recent as its last observation
        await store.create(
            core_event(
                "series",
                eventTime=micro(NOW - 5000),
                series={"count": 2, "lastObservedTime": micro(NOW - 10)},
                reportingComponent="c",
                reportingInstance="i",
                action="A",
            )
        )
        await store.create(
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": "new-api", "namespace": "default"},
                "eventTime": micro(NOW - 4000),
                "reportingController": "c",
                "reportingInstance": "i",
                "action": "A",
                "reason": "R",
                "type": "Normal",
                "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
            }
        )
        rv = str(store.resource_version)
        deleted: list[str] = []

        async def watch() -> None:
            async for ev in store.watch(CORE_EVENTS, resource_version=rv):
                if ev.type is EventType.DELETED:
                    deleted.append(ev.obj["metadata"]["name"])
                    return

        watcher = asyncio.create_task(watch())
        assert await store.expire_events(now=NOW, ttl=3600, limit=100) == 2
        assert await names(store, CORE_EVENTS) == ["recent", "series"]
        assert await names(store, NEW_EVENTS) == []
        await asyncio.wait_for(watcher, 5)
        assert deleted == ["old"]

        # Nothing due: nothing goes. Beyond the limit: the least recently observed goes.
        assert await store.expire_events(now=NOW, ttl=3600, limit=100) == 0
        assert await store.expire_events(now=NOW, ttl=3600, limit=1) == 1
        assert await names(store, CORE_EVENTS) == ["series"]
        # Later, it expires too.
        assert await store.expire_events(now=NOW + 3600, ttl=3600, limit=100) == 1
        assert await names(store, CORE_EVENTS) == []
    finally:
        await store.close()
