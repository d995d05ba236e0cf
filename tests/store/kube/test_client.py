"""The HTTP client through the fault proxy: retries on 429 and 5xx (and when not to),
dropped connections, a timeout on every call, the rate limit and the concurrency bound."""

from __future__ import annotations

import asyncio

import pytest

from gitkrm.errors import NotFound, ServiceUnavailable, Timeout
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store.kube import ClientOptions, ClusterConfig, KubeStore, RateLimiter
from gitkrm.store.kube.client import KubeClient
from tests.store.kube.conftest import FAST_RETRIES, cm, new_namespace
from tests.store.kube.faultproxy import Fault, FaultProxy

CM = GVK(group="", version="v1", kind="ConfigMap")


def _posts(method: str, path: str) -> bool:
    return method == "POST"


def _gets(method: str, path: str) -> bool:
    return method == "GET" and "configmaps" in path


async def test_429_and_503_with_retry_after_are_retried_for_writes(
    proxied: KubeStore, proxy: FaultProxy
) -> None:
    ns = await new_namespace(proxied)
    proxy.add(Fault(count=2, status=429, retry_after="1", match=_posts))
    proxy.add(Fault(count=2, status=503, retry_after="0", match=_posts))
    made = await proxied.create(cm("a", ns, k="v"))
    assert made["metadata"]["name"] == "a"
    answered = [s.answered for s in proxy.seen if s.method == "POST"]
    assert answered[-5:] == [429, 429, 503, 503, 201]
    assert proxied.client.retries == 4


async def test_a_5xx_without_retry_after_is_retried_for_reads_only(
    proxied: KubeStore, proxy: FaultProxy
) -> None:
    ns = await new_namespace(proxied)
    await proxied.create(cm("r", ns))
    proxy.add(Fault(count=3, status=503, match=_gets))
    got = await proxied.get(ObjectRef(group="", kind="ConfigMap", name="r", namespace=ns))
    assert got["metadata"]["name"] == "r"
    proxy.add(Fault(count=1, status=503, match=_posts))
    with pytest.raises(ServiceUnavailable, match="injected 503"):
        await proxied.create(cm("w", ns))
    with pytest.raises(NotFound):  # the proxy answered: the server never saw it
        await proxied.get(ObjectRef(group="", kind="ConfigMap", name="w", namespace=ns))


async def test_a_list_cut_mid_body_is_read_again(proxied: KubeStore, proxy: FaultProxy) -> None:
    ns = await new_namespace(proxied)
    assert await proxied.batch([]) == []
    for i in range(20):
        await proxied.create(cm(f"c{i}", ns, payload="x" * 200))
    proxy.add(Fault(count=2, cut_after=1500, match=_gets))
    listed = await proxied.list(CM, namespace=ns)
    assert len(listed["items"]) == 20
    assert [s.answered for s in proxy.seen if _gets(s.method, s.path)][-3:] == [0, 0, 200]


async def test_retries_give_up(proxy: FaultProxy) -> None:
    store = KubeStore(ClusterConfig(server=proxy.url), ClientOptions(max_retries=2, backoff=0.01))
    try:
        proxy.add(Fault(count=10, status=429, retry_after="0"))
        with pytest.raises(Exception, match="injected 429") as info:
            await store.list(GVK(group="", version="v1", kind="Namespace"))
        assert info.value.code == 429  # type: ignore[attr-defined]
        assert store.client.retries == 2
    finally:
        await store.close()


async def test_every_call_has_a_timeout(proxy: FaultProxy) -> None:
    options = ClientOptions(timeout=0.3, max_retries=0)
    store = KubeStore(ClusterConfig(server=proxy.url), options)
    try:
        await store.discovery.resource("", "v1", "ConfigMap")
        proxy.add(Fault(count=1, hang=True, match=_posts))
        with pytest.raises(Timeout, match="no answer"):
            await store.create(cm("t", "default"))
    finally:
        await store.close()


def test_backoff_honours_retry_after_up_to_a_limit() -> None:
    client = KubeClient(ClusterConfig(server="http://x"), ClientOptions(max_retry_after=5.0))
    assert client._backoff(0, 2.0) == 2.0
    assert client._backoff(0, 60.0) == 5.0
    first = client._backoff(0, None)
    assert 0.05 <= first <= 0.1
    assert client._backoff(20, None) <= 5.0


def test_token_bucket() -> None:
    limiter = RateLimiter(qps=10, burst=3)
    waits = [limiter.reserve() for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert 0.09 < waits[3] <= 0.1  # the 4th waits a tenth of a second, the 5th two
    assert 0.19 < waits[4] <= 0.2
    assert RateLimiter(qps=0, burst=1).reserve() == 0.0  # off


async def test_concurrency_is_bounded(proxy: FaultProxy) -> None:
    store = KubeStore(ClusterConfig(server=proxy.url), ClientOptions(concurrency=3))
    try:
        ns = await new_namespace(store)
        await asyncio.gather(*(store.create(cm(f"p{i}", ns)) for i in range(30)))
        assert 1 <= proxy.max_inflight <= 3
        listed = await store.list(CM, namespace=ns)
        assert len(listed["items"]) == 30
    finally:
        await store.close()


def test_fast_retry_options_are_valid() -> None:
    assert FAST_RETRIES.max_retries > 0
    with pytest.raises(Exception, match="concurrency and burst"):
        ClientOptions(concurrency=0)
