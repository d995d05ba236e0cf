"""Watches over HTTP: resumed from the last revision after a dropped connection or an
overloaded server, without losing or repeating events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from urllib.parse import parse_qs, urlsplit

from gitkrm.krm import GVK, ObjectRef
from gitkrm.store import EventType
from gitkrm.store.kube import KubeStore
from tests.store.kube.conftest import cm, new_namespace
from tests.store.kube.faultproxy import Fault, FaultProxy

CM = GVK(group="", version="v1", kind="ConfigMap")


def _watches(method: str, path: str) -> bool:
    return "watch=true" in path


async def _collect(store: KubeStore, ns: str, rv: str | None, n: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    async for ev in store.watch(CM, namespace=ns, resource_version=rv):
        out.append((ev.type.value, ev.obj["metadata"]["name"]))
        if len(out) == n:
            break
    return out


async def test_a_dropped_watch_resumes_from_the_last_event(
    proxied: KubeStore, proxy: FaultProxy
) -> None:
    ns = await new_namespace(proxied)
    listed = await proxied.list(CM, namespace=ns)
    rv = listed["metadata"]["resourceVersion"]
    for i in range(5):
        await proxied.create(cm(f"w{i}", ns, payload="y" * 100))
    proxy.add(Fault(count=1, cut_after=700, match=_watches))  # mid-way through the 2nd event
    proxy.add(Fault(count=1, status=503, match=_watches))  # and the reconnect is refused once
    got = await asyncio.wait_for(_collect(proxied, ns, rv, 5), 10)
    assert got == [("ADDED", f"w{i}") for i in range(5)]
    opened = [
        parse_qs(urlsplit(h.split(b" ")[1].decode()).query)
        for h in proxy.heads
        if b"watch=true" in h
    ]
    assert len(opened) == 3
    assert opened[0]["resourceVersion"] == [rv]
    assert opened[1]["resourceVersion"] != [rv]  # resumed after the first event
    assert opened[2]["resourceVersion"] == opened[1]["resourceVersion"]


async def test_a_watch_without_revision_lists_first(kube: KubeStore) -> None:
    ns = await new_namespace(kube)
    await kube.create(cm("old1", ns))
    await kube.create(cm("old2", ns))
    stream = kube.watch(CM, namespace=ns)
    first = [await anext(stream), await anext(stream)]
    assert {ev.obj["metadata"]["name"] for ev in first} == {"old1", "old2"}
    assert all(ev.type is EventType.ADDED for ev in first)
    assert all(ev.obj["kind"] == "ConfigMap" for ev in first)
    await kube.patch(
        ObjectRef(group="", kind="ConfigMap", name="old1", namespace=ns),
        {"data": {"a": "b"}},
        "merge",
    )
    ev = await asyncio.wait_for(anext(stream), 10)
    assert (ev.type, ev.obj["metadata"]["name"], ev.obj["data"]) == (
        EventType.MODIFIED,
        "old1",
        {"a": "b"},
    )
    assert ev.raw.endswith(b"\n")
    assert isinstance(stream, AsyncGenerator)
    await stream.aclose()
