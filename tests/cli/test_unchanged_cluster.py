"""`run --once` with nothing changed on the cluster target (a gitkrm API server on loopback,
reached through a kubeconfig, as a cluster): other writers move the resourceVersion, so
the owned objects' digest tells (`gitkrm.sync.owned`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from gitkrm.cli.main import main
from gitkrm.krm import ObjectRef
from gitkrm.server import ServeOptions, ServerThread
from gitkrm.store.kube import KubeStore, load_kubeconfig
from tests.sync.sync_helpers import Remote, configmap, deployment

WEB = ObjectRef(group="apps", kind="Deployment", name="web", namespace="default")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    with ServerThread(options=ServeOptions(port=0, state_dir=tmp_path / "server")) as s:
        yield s


def _kubeconfig(server: ServerThread) -> Path:
    assert server.bound is not None
    assert server.bound.kubeconfig is not None
    return Path(server.bound.kubeconfig)


def _on_cluster(
    server: ServerThread, write: Callable[[KubeStore], Coroutine[Any, Any, None]]
) -> None:
    async def go() -> None:
        store = KubeStore(load_kubeconfig(_kubeconfig(server)))
        try:
            await write(store)
        finally:
            await store.close()

    asyncio.run(go())


def _run_once(capsys: pytest.CaptureFixture[str], flags: list[str]) -> str:
    code = main(["run", "--once", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_nothing_changed_on_a_cluster_despite_other_writes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, server: ServerThread
) -> None:
    remote = Remote(tmp_path / "repo")
    remote.write("cm.yaml", configmap("cfg", ns="default"))
    remote.write("web.yaml", deployment("web", ns="default"))
    remote.commit()
    flags = [
        *("--repo", remote.url, "--source-name", "apps", "--state", str(tmp_path / "st")),
        *("--kubeconfig", str(_kubeconfig(server))),
    ]
    assert _run_once(capsys, flags).startswith("apps: synced revision ")
