"""The one watch cache: one list and one watch per kind and scope, shared by its readers,
dropped when nobody holds it; scopes by namespace and label selector; unserved kinds."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gitkrm.cache import Scope, WatchCache
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.store import Store
from gitkrm.store.sqlite import SqliteStore
from tests.support import configmap, eventually_async

CM = GVK(group="", version="v1", kind="ConfigMap")
WIDGET = GVK(group="example.com", version="v1", kind="Widget")
OURS = Scope(label_selector="gitkrm.io/source=a")


@pytest.fixture
async def cache(store: Store) -> AsyncIterator[WatchCache]:
    c = WatchCache(store)
    c.start()
    yield c
    await c.stop()


def _names(events: list[tuple[Obj | None, Obj | None]]) -> list[tuple[str | None, str | None]]:
    return [
        (o["metadata"]["name"] if o else None, n["metadata"]["name"] if n else None)
        for o, n in events
    ]


async def test_readers_of_one_kind_and_scope_share_one_list_and_one_watch(
    store: Store, cache: WatchCache
) -> None:
    await store.create(configmap("before", labels={"gitkrm.io/source": "a"}))
    first: list[tuple[Obj | None, Obj | None]] = []
    second: list[tuple[Obj | None, Obj | None]] = []
    a = cache.subscribe(CM, lambda o, n: first.append((o, n)), OURS)
    b = cache.subscribe(CM, lambda o, n: second.append((o, n)), OURS)
    assert a.informer is b.informer
    await a.informer.synced.wait()
    await store.create(configmap("after", labels={"gitkrm.io/source": "a"}))
    await store.create(configmap("other", labels={"gitkrm.io/source": "b"}))
    await eventually_async(lambda: len(second) >= 2, message="both objects of scope a")
    assert _names(first) == _names(second) == [(None, "before"), (None, "after")]
    stats = cache.stats()
    assert (stats.informers, stats.lists, stats.watches) == (1, 1, 1)
    await a.close()
    await b.close()
    assert cache.stats().informers == 0, "a kind nobody holds is not cached"
    assert cache.stats().lists == 1


async def test_a_late_subscriber_hears_of_what_is_cached_first(
    store: Store, cache: WatchCache
) -> None:
    await store.create(configmap("x"))
    holder = cache.acquire(CM)
    await holder.synced.wait()
    seen: list[tuple[Obj | None, Obj | None]] = []
    sub = cache.subscribe(CM, lambda o, n: seen.append((o, n)))
    assert _names(seen) == [(None, "x")]
    await store.delete(ObjectRef(group="", kind="ConfigMap", name="x", namespace="default"))
    await eventually_async(lambda: len(seen) == 2, message="the deletion")
    assert _names(seen)[1] == ("x", None)
    await sub.close()
    assert cache.stats().informers == 1, "still held by acquire"
    await cache.release(holder)
    assert cache.stats().informers == 0


async def test_scopes_are_separate_informers(store: Store, cache: WatchCache) -> None:
    await store.create(configmap("in-default"))
    await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    await store.create(configmap("in-other", "other"))
    everything = cache.acquire(CM)
    other = cache.acquire(CM, Scope(namespace="other"))
    assert everything is not other
    await cache.wait_synced()
    assert sorted(o["metadata"]["name"] for o in everything.objects()) == [
        "in-default",
        "in-other",
    ]
    assert [o["metadata"]["name"] for o in other.objects()] == ["in-other"]


async def test_a_kind_not_served_is_an_empty_synced_cache_told_after_each_list(
    cache: WatchCache,
) -> None:
    lists = 0

    def listed() -> None:
        nonlocal lists
        lists += 1

    informer = cache.acquire(WIDGET)
    informer.add_list_listener(listed)
    await informer.synced.wait()
    assert informer.served is False
    assert informer.objects() == []
    assert lists >= 1
    await eventually_async(lambda: lists >= 2, message="a second list while not served")


async def test_an_expired_watch_lists_again_and_tells_what_changed() -> None:
    store = SqliteStore.open(":memory:", history_limit=1)
    cache = WatchCache(store)
    cache.start()
    try:
        await store.create(configmap("x", data={"v": "0"}))
        heard: list[tuple[Obj | None, Obj | None]] = []
        sub = cache.subscribe(CM, lambda o, n: heard.append((o, n)))
        informer = sub.informer
        await informer.synced.wait()
        await informer.stop()  # the watch is down while the store moves on
        ref = ObjectRef(group="", kind="ConfigMap", name="x", namespace="default")
        for i in range(3):
            await store.patch(ref, {"data": {"v": str(i + 1)}}, "merge")
        store.compact()
        informer.start()  # resumes from its old revision: Expired, then a list
        await eventually_async(
            lambda: informer.lists == 2 and informer.trusted, message="a list after Expired"
        )
        last = heard[-1][1]
        assert last is not None
        assert last["data"] == {"v": "3"}
        await sub.close()
    finally:
        await cache.stop()
        await store.close()


async def test_the_cache_keeps_objects_without_managed_fields(
    store: Store, cache: WatchCache
) -> None:
    """They are about half of a stored object and no reader needs them (memory)."""
    made = await store.create(configmap("x"), field_manager="someone")
    assert made["metadata"]["managedFields"]
    informer = cache.acquire(CM)
    await informer.synced.wait()
    cached = informer.get("default", "x")
    assert cached is not None
    assert "managedFields" not in cached["metadata"]
    assert cached["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    informer.observe(await store.update({**cached, "data": {"k": "v"}}, field_manager="b"))
    observed = informer.get("default", "x")
    assert observed is not None
    assert "managedFields" not in observed["metadata"]
    stored = await store.get(ObjectRef(group="", kind="ConfigMap", name="x", namespace="default"))
    managers = [e["manager"] for e in stored["metadata"]["managedFields"]]
    assert sorted(managers) == ["b", "someone"], "a write of a cached object keeps them"


async def test_a_released_informer_keeps_nothing(store: Store, cache: WatchCache) -> None:
    """What a dropped informer cached is freed, even if something still refers to it."""
    await store.create(configmap("x"))
    sub = cache.subscribe(CM, lambda o, n: None)
    informer = sub.informer
    await informer.synced.wait()
    assert informer.objects()
    await sub.close()
    assert informer.objects() == []
    assert informer.rv is None
