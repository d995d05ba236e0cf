"""What the cluster end-to-end tests share: a `gitkrm serve` API server with TLS and a bearer
token standing in for a Kubernetes cluster (no real cluster runs on these machines), with the
bundled controllers playing kube-controller-manager; a kubeconfig pointing at it; reads and
edits through the API the way any client makes them; fast leader-election flags."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

from gitkrm.agent.crd import gitsource_crd
from gitkrm.controllers import ControllerOptions
from gitkrm.errors import NotFound
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.server import ServeOptions, ServerThread
from gitkrm.server.kubeconfig import write_kubeconfig
from gitkrm.server.tls import generate_self_signed
from gitkrm.store import Store, open_store
from gitkrm.store.sqlite import SqliteStore
from tests.e2e.e2e_support import gitkrm
from tests.support.running import Running

T = TypeVar("T")

TOKEN = "e2e-cluster-t0ken"
LEASE_FLAGS = (
    "--leader-elect-lease-duration",
    "2s",
    "--leader-elect-renew-deadline",
    "1.5s",
    "--leader-elect-retry-period",
    "0.3s",
)
"""Short leases: a standby takes over within about 2.7 s of the leader's death."""
LEASE_DURATION = 2.0
LEASE_GVK = GVK(group="coordination.k8s.io", version="v1", kind="Lease")


def lease_ref(agent: str, namespace: str = "gitkrm-system") -> ObjectRef:
    return ObjectRef(
        group="coordination.k8s.io", kind="Lease", name=f"gitkrm-{agent}", namespace=namespace
    )


class Cluster(Running):
    """The API server in a thread of this process; `kubeconfig` is what agents are given.

    `secure`: TLS and a token (the default); else plain HTTP on loopback (what the fault
    proxy speaks to). `gitsource_crd`: installed as the Helm chart would (the agent never
    installs it on a cluster).
    """

    def __init__(
        self,
        root: Path,
        *,
        secure: bool = True,
        gitsource_crd: bool = True,
        controllers: bool = True,
    ) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self._crd = gitsource_crd
        options = ServeOptions(port=0, state_dir=root)
        if secure:
            tls = generate_self_signed(root, ["127.0.0.1", "localhost"])
            options = ServeOptions(port=0, token=TOKEN, tls=tls, state_dir=root)
        self.server = ServerThread(
            options=options, controllers=ControllerOptions() if controllers else None
        )
        self.kubeconfig = root / "kubeconfig"

    def start(self) -> None:
        self.server.start()
        assert self.server.bound is not None
        assert self.server.bound.kubeconfig == self.kubeconfig
        if self._crd:
            self.run(lambda store: store.create(gitsource_crd()))

    def stop(self) -> None:
        self.server.stop()

    @property
    def url(self) -> str:
        return self.server.url

    def kubeconfig_for(self, path: Path, *, server: str) -> Path:
        """A kubeconfig for another address of this cluster (a proxy in front of it)."""
        return write_kubeconfig(path, server=server)

    def run(self, fn: Callable[[SqliteStore], Coroutine[Any, Any, T]]) -> T:
        """`fn(store)` on the server's own loop: reads that bypass the HTTP API."""
        return self.server.run(fn)

    def get(self, ref: ObjectRef) -> Obj | None:
        async def read(store: SqliteStore) -> Obj | None:
            try:
                return await store.get(ref)
            except NotFound:
                return None

        return self.run(read)

    def names(self, gvk: GVK, *, selector: str | None = None) -> set[str]:
        """`namespace/name` of every object of a kind (matching `selector`)."""

        async def read(store: SqliteStore) -> set[str]:
            listed = await store.list(gvk, label_selector=selector)
            return {
                f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}"
                for o in listed["items"]
            }

        return self.run(read)

    async def client(self) -> Store:
        """A KubeStore through the kubeconfig: edits as any API client makes them."""
        return await open_store("kube://?" + urlencode({"kubeconfig": str(self.kubeconfig)}))


def run_once(
    *args: str,
    cluster: Cluster,
    state: Path,
    cwd: Path,
    kubeconfig: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`gitkrm run --once --kubeconfig ... ARGS` to completion (the cluster's kubeconfig
    unless another is given: a proxy's)."""
    return gitkrm(
        "run",
        "--once",
        "--kubeconfig",
        str(kubeconfig or cluster.kubeconfig),
        "--state",
        str(state),
        "--agent-name",
        "e2e",
        *LEASE_FLAGS,
        *args,
        cwd=cwd,
        env=env,
    )


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A blocking call (a subprocess, the server's own loop) without stalling this loop."""
    return await asyncio.to_thread(fn, *args, **kwargs)
