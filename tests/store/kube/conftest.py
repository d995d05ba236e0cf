"""Fixtures for the cluster-target tests: a real gitkrm API server with TLS and a bearer
token (as a cluster), a plain one behind the fault proxy, and kubeconfigs for them."""

from __future__ import annotations

import base64
import itertools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitkrm.server import ServeOptions, ServerThread
from gitkrm.server.tls import generate_self_signed
from gitkrm.store.kube import ClientOptions, KubeStore, load_kubeconfig
from tests.store.kube.faultproxy import FaultProxy

TOKEN = "s3cret-t0ken"
_names = itertools.count(1)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    state = tmp_path_factory.mktemp("secured")
    tls = generate_self_signed(state, ["127.0.0.1", "localhost"])
    with ServerThread(options=ServeOptions(port=0, token=TOKEN, tls=tls, state_dir=state)) as s:
        yield s


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """Loopback HTTP without a token: the fault proxy speaks plain HTTP to it."""
    state = tmp_path_factory.mktemp("plain")
    with ServerThread(options=ServeOptions(port=0, state_dir=state)) as s:
        yield s


def ca_of(server: ServerThread) -> bytes:
    assert server.bound is not None
    assert server.bound.kubeconfig is not None
    return (server.bound.kubeconfig.parent / "tls.crt").read_bytes()


def write_kubeconfig(path: Path, *, server: str, user: dict[str, Any], **cluster: Any) -> Path:
    """A kubeconfig with one context `test` (and a decoy `other` pointing nowhere)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": {"server": server, **cluster}},
            {"name": "nowhere", "cluster": {"server": "https://127.0.0.1:1"}},
        ],
        "users": [{"name": "u", "user": user}, {"name": "nobody", "user": {}}],
        "contexts": [
            {"name": "test", "context": {"cluster": "c", "user": "u", "namespace": "team-a"}},
            {"name": "other", "context": {"cluster": "nowhere", "user": "nobody"}},
        ],
        "current-context": "other",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def ca_data(server: ServerThread) -> str:
    return base64.b64encode(ca_of(server)).decode()


@pytest.fixture
async def kube(secured: ServerThread) -> AsyncIterator[KubeStore]:
    """A KubeStore on the secured server, through the kubeconfig it wrote."""
    assert secured.bound is not None
    assert secured.bound.kubeconfig is not None
    store = KubeStore(load_kubeconfig(secured.bound.kubeconfig))
    yield store
    await store.close()


@pytest.fixture
async def proxy(plain: ServerThread) -> AsyncIterator[FaultProxy]:
    p = await FaultProxy("127.0.0.1", plain.port).start()
    yield p
    await p.stop()


FAST_RETRIES = ClientOptions(backoff=0.01, max_backoff=0.05, max_retry_after=0.05, timeout=10)


@pytest.fixture
async def proxied(proxy: FaultProxy) -> AsyncIterator[KubeStore]:
    """A KubeStore through the fault proxy, with short backoffs."""
    from gitkrm.store.kube import ClusterConfig

    store = KubeStore(ClusterConfig(server=proxy.url), FAST_RETRIES)
    yield store
    await store.close()


async def new_namespace(store: KubeStore) -> str:
    name = f"kube-{next(_names)}"
    await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def cm(name: str, ns: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }
