"""The runtime pieces on their own: the work queue and the informer."""

from __future__ import annotations

import asyncio

from gitkrm.cache.informer import Informer, slim
from gitkrm.controllers.queue import ShutDown, WorkQueue
from gitkrm.krm import GVK, ObjectRef
from gitkrm.krm.clock import VirtualClock
from gitkrm.store.sqlite import SqliteStore
from tests.controllers.conftest import wait_until
from tests.support.builders import configmap

CMS = GVK(group="", version="v1", kind="ConfigMap")


async def test_queue_deduplicates_and_requeues_keys_added_while_processing() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert await q.get_batch(10) == ["a", "b"]
    q.add("a")  # while "a" is processed: queued again once it is done
    assert len(q) == 0
    q.done("a")
    q.done("b")
    assert await q.get() == "a"
    q.done("a")
    assert q.idle


async def test_queue_delays_and_backoff() -> None:
    q: WorkQueue[str] = WorkQueue(base_delay=0.01, max_delay=0.04)
    assert [q.add_rate_limited("k") for _ in range(4)] == [0.01, 0.02, 0.04, 0.04]
    q.forget("k")
    assert q.failures("k") == 0
    q.add_after("x", 10)
    q.add_after("x", 0.01)  # the earlier add wins
    assert await asyncio.wait_for(q.get(), 2) in ("k", "x")
    q.shutdown()
    try:
        await q.get()
    except ShutDown:
        pass
    else:
        raise AssertionError("a shut down queue handed out a key")


async def test_informer_lists_watches_and_reads_its_writes() -> None:
    store = SqliteStore.open(":memory:")
    await store.create(configmap("a"))
    inf = Informer(store, CMS)
    seen: list[tuple[str | None, str | None]] = []
    inf.add_handler(
        lambda old, new: seen.append(
            (
                (old or {}).get("metadata", {}).get("name"),
                (new or {}).get("metadata", {}).get("name"),
            )
        )
    )
    inf.start()
    await inf.synced.wait()
    assert inf.get("default", "a") is not None
    b = await store.create(configmap("b"))
    inf.observe(b)  # a write recorded before its watch event
    assert inf.get("default", "b") == slim(b)  # as the cache keeps objects
    gone = await store.delete(ObjectRef(group="", kind="ConfigMap", name="b", namespace="default"))
    inf.observe_deleted(gone)
    assert inf.get("default", "b") is None
    await wait_until(lambda: (None, "b") in seen and ("b", None) in seen)
    assert inf.get("default", "b") is None  # the older ADDED event did not bring it back
    await inf.stop()
    await store.close()


async def test_informer_lists_again_after_expired() -> None:
    store = SqliteStore.open(":memory:", history_limit=1)
    inf = Informer(store, CMS)
    inf.start()
    await inf.synced.wait()
    await inf.stop()
    for i in range(5):
        await store.create(configmap(f"c{i}"))
    store.compact()
    inf.start()  # resumes from a compacted revision: Expired, then a new list
    await wait_until(lambda: len(inf) == 5)
    await inf.stop()
    await store.close()


async def test_queue_delays_run_on_its_clock() -> None:
    clock = VirtualClock(0.0)
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("late", 600)
    q.add_after("soon", 5)
    await asyncio.sleep(0.01)
    assert (len(q), q.delayed) == (0, 2)  # the wall clock moving does not fire them
    clock.advance(clock.next_due() or 0)
    assert (clock.time(), await q.get()) == (5.0, "soon")
    q.done("soon")
    clock.advance(600)
    assert (await q.get(), q.delayed) == ("late", 0)
