"""watch: order, replay then live, selectors, bookmarks, Expired, slow watchers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitkrm.errors import Expired, GitkrmError
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store.protocol import EventType, WatchEvent
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import configmap, namespace

CMS = GVK(group="", version="v1", kind="ConfigMap")


def ref(name: str, ns: str = "default") -> ObjectRef:
    return ObjectRef(group="", kind="ConfigMap", namespace=ns, name=name)


async def take(it: AsyncIterator[WatchEvent], n: int) -> list[WatchEvent]:
    """The next n events (failing after 5 s without one)."""
    out = []
    for _ in range(n):
        out.append(await asyncio.wait_for(anext(it), 5))
    return out


def summary(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type.value, e.obj["metadata"]["name"]) for e in events]


async def test_watch_from_revision(store: SqliteStore) -> None:
    await store.create(configmap("a"))
    await store.create(configmap("b"))
    it = store.watch(CMS, resource_version=str(store.resource_version))
    a = await store.get(ref("a"))
    await store.update({**a, "data": {"x": "1"}})
    await store.delete(ref("b"))
    await store.create(configmap("c"))
    events = await take(it, 3)
    assert summary(events) == [("MODIFIED", "a"), ("DELETED", "b"), ("ADDED", "c")]
    rvs = [int(e.obj["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs)
    assert rvs[-1] == store.resource_version
    line = orjson.loads(events[0].raw)
    assert line == {"type": "MODIFIED", "object": events[0].obj}
    assert events[0].raw.endswith(b"\n")
    t, obj = events[2]  # iterable as (type, obj)
    assert t is EventType.ADDED
    assert obj["kind"] == "ConfigMap"


async def test_watch_without_revision_starts_with_added(store: SqliteStore) -> None:
    await store.create(configmap("a"))
    await store.create(configmap("b"))
    it = store.watch(CMS)
    first = await take(it, 2)
    assert summary(first) == [("ADDED", "a"), ("ADDED", "b")]
    await store.create(configmap("c"))
    assert summary(await take(it, 1)) == [("ADDED", "c")]


async def test_watch_namespace_and_version(mem: SqliteStore) -> None:
    await mem.create(namespace("other"))
    it = mem.watch(CMS, namespace="other", resource_version=str(mem.resource_version))
    await mem.create(configmap("a"))
    await mem.create(configmap("b", "other"))
    assert summary(await take(it, 1)) == [("ADDED", "b")]


async def test_selectors_turn_transitions_into_added_and_deleted(store: SqliteStore) -> None:
    it = store.watch(CMS, resource_version=str(store.resource_version), label_selector="tier=web")
    a = await store.create({**configmap("a"), "metadata": {"name": "a", "labels": {"tier": "db"}}})
    a["metadata"]["labels"] = {"tier": "web"}
    a = await store.update(a)
    a["metadata"]["labels"] = {"tier": "db"}
    a = await store.update(a)
    await store.create({**configmap("b"), "metadata": {"name": "b", "labels": {"tier": "web"}}})
    events = await take(it, 3)
    assert summary(events) == [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "b")]
    gone = events[1].obj
    assert gone["metadata"]["labels"] == {"tier": "web"}  # the last state that matched...
    assert (
        gone["metadata"]["resourceVersion"] == a["metadata"]["resourceVersion"]
    )  # ...at the change
    # The same transitions are replayed from history.
    start = int(events[0].obj["metadata"]["resourceVersion"]) - 1
    replay = store.watch(CMS, resource_version=str(start), label_selector="tier=web")
    assert summary(await take(replay, 3)) == summary(events)


async def test_field_selector_watch(mem: SqliteStore) -> None:
    it = mem.watch(CMS, resource_version="1", field_selector="metadata.name=b")
    await mem.create(configmap("a"))
    await mem.create(configmap("b"))
    assert summary(await take(it, 1)) == [("ADDED", "b")]


async def test_events_are_shared_between_watchers(mem: SqliteStore) -> None:
    rv = str(mem.resource_version)
    w1 = mem.watch(CMS, resource_version=rv)
    w2 = mem.watch(CMS, resource_version=rv)
    first = asyncio.ensure_future(take(w1, 1))
    second = asyncio.ensure_future(take(w2, 1))
    for _ in range(1000):  # until both caught up with history and went live
        if mem.watcher_count == 2:
            break
        await asyncio.sleep(0)
    assert mem.watcher_count == 2
    await mem.create(configmap("a"))
    e1, e2 = (await first)[0], (await second)[0]
    assert e1 is e2


async def test_bookmarks() -> None:
    s = SqliteStore.open(":memory:", bookmark_interval=0.05)
    try:
        it = s.watch(CMS, resource_version=str(s.resource_version), allow_bookmarks=True)
        await s.create(configmap("a"))
        events = await take(it, 2)
        assert summary(events[:1]) == [("ADDED", "a")]
        assert events[1].type is EventType.BOOKMARK
        assert events[1].obj == {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(s.resource_version)},
        }
    finally:
        await s.close()


async def test_expired_after_compaction(store: SqliteStore) -> None:
    await store.create(configmap("a"))
    old = store.resource_version - 1
    await store.create(configmap("b"))
    store.compact(store.resource_version)
    with pytest.raises(Expired, match=f"too old resource version: {old}"):
        store.watch(CMS, resource_version=str(old))
    # The compaction revision itself is still watchable.
    it = store.watch(CMS, resource_version=str(store.resource_version))
    await store.create(configmap("c"))
    assert summary(await take(it, 1)) == [("ADDED", "c")]


async def test_history_limit_compacts_automatically() -> None:
    s = SqliteStore.open(":memory:", history_limit=10)
    try:
        for i in range(100):
            await s.create(configmap(f"c{i}"))
        await asyncio.sleep(0)  # compaction runs right after the writes, on the loop
        assert s.compacted_revision >= s.resource_version - 10 - 64
        with pytest.raises(Expired):
            s.watch(CMS, resource_version="5")
        rows = s._core.conn.execute("SELECT count(*) FROM events").fetchone()[0]
        assert rows <= 100 + 10 + 64 + 4  # latest row per live key, plus the recent history
    finally:
        await s.close()


async def test_slow_watcher_is_closed_and_can_resume() -> None:
    s = SqliteStore.open(":memory:", watch_queue_size=5)
    try:
        it = s.watch(CMS, resource_version=str(s.resource_version))
        await s.create(configmap("c0"))
        got = await take(it, 1)  # now live, subscribed to the hub
        for i in range(1, 20):  # the watcher does not read meanwhile
            await s.create(configmap(f"c{i}"))
        assert s.watcher_count == 0  # dropped: writers no longer feed it
        async for ev in it:  # what was queued, then a clean end
            got.append(ev)
        assert summary(got) == [("ADDED", f"c{i}") for i in range(6)]
        resumed = s.watch(CMS, resource_version=got[-1].obj["metadata"]["resourceVersion"])
        rest = await take(resumed, 14)
        assert summary(rest) == [("ADDED", f"c{i}") for i in range(6, 20)]
    finally:
        await s.close()


async def test_close_ends_watchers() -> None:
    s = SqliteStore.open(":memory:")
    it = s.watch(CMS)
    pending = asyncio.ensure_future(anext(it))
    await asyncio.sleep(0.01)
    await s.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(pending, 5)


async def _run_writers(plans: list[list[tuple[str, int]]], starts: list[int]) -> None:
    """Writers interleave at every await; watchers start before and between writes."""
    s = SqliteStore.open(":memory:")
    committed: list[tuple[int, str, str]] = []  # (rv, type, name) of acknowledged writes
    watchers: list[tuple[int, AsyncIterator[WatchEvent]]] = [
        (s.resource_version, s.watch(CMS, resource_version=str(s.resource_version)))
    ]

    async def writer(plan: list[tuple[str, int]]) -> None:
        for op, k in plan:
            name = f"k{k}"
            try:
                if op == "create":
                    out = await s.create(configmap(name))
                    etype = "ADDED"
                elif op == "update":
                    cur = await s.get(ref(name))
                    cur["data"] = {"n": str(len(committed))}
                    out = await s.update(cur)
                    etype = "MODIFIED"
                else:
                    out = await s.delete(ref(name))
                    etype = "DELETED"
            except GitkrmError:
                pass  # AlreadyExists / NotFound: nothing committed
            else:
                committed.append((int(out["metadata"]["resourceVersion"]), etype, name))
            await asyncio.sleep(0)

    async def late_watcher(after: int) -> None:
        for _ in range(after):
            await asyncio.sleep(0)
        rv = s.resource_version
        watchers.append((rv, s.watch(CMS, resource_version=str(rv))))

    try:
        await asyncio.gather(*(writer(p) for p in plans), *(late_watcher(a) for a in starts))
        committed.sort()
        rvs = [c[0] for c in committed]
        assert len(set(rvs)) == len(rvs)
        # Every watcher sees exactly the committed changes after its start, in order.
        for start, it in watchers:
            suffix = [c for c in committed if c[0] > start]
            assert [_key(e) for e in await take(it, len(suffix))] == suffix
            assert await _drain(it) == []  # and nothing else
        # Resuming from any committed revision gives exactly the suffix.
        for rv, _, _ in committed:
            suffix = [c for c in committed if c[0] > rv]
            events = await take(s.watch(CMS, resource_version=str(rv)), len(suffix))
            assert [_key(e) for e in events] == suffix
    finally:
        await s.close()


def _key(e: WatchEvent) -> tuple[int, str, str]:
    return (int(e.obj["metadata"]["resourceVersion"]), e.type.value, e.obj["metadata"]["name"])


async def _drain(it: AsyncIterator[WatchEvent]) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    while True:
        try:
            out.append(await asyncio.wait_for(anext(it), 0.05))
        except TimeoutError:
            return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plans=st.lists(
        st.lists(
            st.tuples(st.sampled_from(["create", "update", "delete"]), st.integers(0, 4)),
            max_size=12,
        ),
        min_size=2,
        max_size=4,
    ),
    starts=st.lists(st.integers(0, 30), max_size=3),
)
def test_watch_order_under_concurrent_writers(
    plans: list[list[tuple[str, int]]], starts: list[int]
) -> None:
    asyncio.run(_run_writers(plans, starts))
