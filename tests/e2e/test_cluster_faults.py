"""The cluster target through a faulty network (tests/store/kube/faultproxy.py in front of
the API server): 429 and 503 answers for a while (the sync completes, retried as the server
asks), and connections dropped mid-sync (that sync fails, the next one converges)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gitkrm.krm import GVK, ObjectRef
from tests.e2e.cluster_support import Cluster, in_thread, run_once
from tests.e2e.manifests import many_configmaps
from tests.source.source_gitrepo import RemoteRepo
from tests.store.kube.faultproxy import Fault, FaultProxy

CM = GVK(group="", version="v1", kind="ConfigMap")
COUNT = 12


def _writes(method: str, path: str) -> bool:
    return method in ("POST", "PUT", "PATCH", "DELETE")


def _reads(method: str, path: str) -> bool:
    return method == "GET" and "watch=" not in path


@pytest.fixture
async def proxied(tmp_path: Path) -> AsyncIterator[tuple[Cluster, FaultProxy, Path]]:
    """A plain-HTTP cluster, the proxy in front of it, and a kubeconfig for the proxy."""
    with Cluster(tmp_path / "cluster", secure=False, controllers=False) as cluster:
        proxy = await FaultProxy("127.0.0.1", cluster.server.port).start()
        try:
            yield (
                cluster,
                proxy,
                cluster.kubeconfig_for(tmp_path / "proxy.kubeconfig", server=proxy.url),
            )
        finally:
            await proxy.stop()


def _managed(cluster: Cluster) -> set[str]:
    return cluster.names(CM, selector="gitkrm.io/source=default")


async def test_429_and_503_for_a_while_the_sync_completes(
    repo: RemoteRepo, tmp_path: Path, proxied: tuple[Cluster, FaultProxy, Path]
) -> None:
    cluster, proxy, kubeconfig = proxied
    repo.write("cms.yaml", many_configmaps("busy", COUNT))
    repo.commit("many")
    repo.push()
    proxy.add(Fault(count=6, status=429, retry_after="0", match=_writes))
    proxy.add(Fault(count=4, status=503, retry_after="0", match=_writes))
    proxy.add(Fault(count=4, status=503, match=_reads))
    res = await in_thread(
        run_once, "--repo", repo.url, cluster=cluster, state=tmp_path / "s", cwd=tmp_path,
        kubeconfig=kubeconfig,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{COUNT} created" in res.stdout
    answered = [s.answered for s in proxy.seen]
    assert answered.count(429) == 6
    assert answered.count(503) == 8
    assert _managed(cluster) == {f"default/busy-{i}" for i in range(COUNT)}


async def test_connections_dropped_mid_sync_the_next_sync_converges(
    repo: RemoteRepo, tmp_path: Path, proxied: tuple[Cluster, FaultProxy, Path]
) -> None:
    cluster, proxy, kubeconfig = proxied
    state = tmp_path / "s"

    async def sync() -> tuple[int, str]:
        res = await in_thread(
            run_once, "--repo", repo.url, cluster=cluster, state=state, cwd=tmp_path,
            kubeconfig=kubeconfig,
        )  # fmt: skip
        return res.returncode, res.stdout + res.stderr

    # A few creates reach the server but their answers are cut short: the engine reads
    # what landed and writes the rest again, so the same sync still converges.
    repo.write("cms.yaml", many_configmaps("cut", COUNT))
    repo.commit("many")
    repo.push()
    proxy.add(Fault(count=3, cut_after=10, match=_creates))
    code, out = await sync()
    assert sum(1 for s in proxy.seen if s.answered == 0) == 3
    assert code == 0, out
    assert _managed(cluster) == {f"default/cut-{i}" for i in range(COUNT)}

    # Every answer to a create cut short (the writes land; the agent can't know): the sync
    # fails; the next one, on a healthy network, converges without touching them again.
    repo.write("more.yaml", many_configmaps("more", COUNT))
    repo.commit("more")
    repo.push()
    proxy.add(Fault(count=1000, cut_after=10, match=_creates))
    code, out = await sync()
    assert code == 1, out
    assert "default: FAILED" in out
    proxy.faults.clear()
    code, out = await sync()
    assert code == 0, out
    assert "0 failed" in out
    want = {f"default/{p}-{i}" for p in ("cut", "more") for i in range(COUNT)}
    assert _managed(cluster) == want
    inventory = cluster.get(
        ObjectRef(
            group="", kind="ConfigMap", name="gitkrm-inventory-default", namespace="gitkrm-system"
        )
    )
    assert inventory is not None
    assert len(inventory["data"]) == 2 * COUNT


def _creates(method: str, path: str) -> bool:
    return method == "POST" and "/configmaps" in path and "gitkrm-system" not in path
