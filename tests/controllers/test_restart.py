"""kill -9 of a process running the controllers during a rollout, then a restart: no
duplicate ReplicaSets, no lost pods, and the rollout completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitkrm.health import Health, health_of
from gitkrm.krm import GVK
from gitkrm.store.sqlite import SqliteStore
from tests.controllers.conftest import ready, wait_until
from tests.support.builders import deployment
from tests.support.processes import stop

ROOT = Path(__file__).resolve().parents[2]
SETS = GVK(group="apps", version="v1", kind="ReplicaSet")
PODS = GVK(group="", version="v1", kind="Pod")
DEPLOYMENTS = GVK(group="apps", version="v1", kind="Deployment")


@pytest.fixture
def spawn() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        stop(p)


def _start(path: Path, procs: list[subprocess.Popen[str]], *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.controllers.controller_process", str(path), *extra],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    procs.append(proc)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "started"
    return proc


async def test_kill_during_rollout_then_restart(
    tmp_path: Path, spawn: list[subprocess.Popen[str]]
) -> None:
    path = tmp_path / "store.db"
    store = SqliteStore.open(str(path))
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    await store.create(deployment("web", replicas=6, strategy=strategy))
    await store.close()
    reader = SqliteStore.open(str(path), read_only=True)
    try:
        first = _start(path, spawn, "nginx:1.26")

        async def mid_rollout() -> bool:
            sets = (await reader.list(SETS, namespace="default"))["items"]
            sizes = [rs["spec"]["replicas"] for rs in sets]
            return len(sets) == 2 and all(n >= 1 for n in sizes)

        await wait_until(mid_rollout, timeout=60, what="a rollout in progress")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        _start(path, spawn)

        async def complete() -> bool:
            d = (await reader.list(DEPLOYMENTS, namespace="default"))["items"][0]
            if (
                health_of(d).status is not Health.CURRENT
                or d["status"].get("observedGeneration") != 2
            ):
                return False
            pods = (await reader.list(PODS, namespace="default"))["items"]
            return len(pods) == 6 and all(
                ready(p) and p["spec"]["containers"][0]["image"] == "nginx:1.26" for p in pods
            )

        await wait_until(complete, timeout=60, what="the rollout to complete after the restart")
        sets = (await reader.list(SETS, namespace="default"))["items"]
        assert len(sets) == 2, [rs["metadata"]["name"] for rs in sets]
        assert sorted(rs["spec"]["replicas"] for rs in sets) == [0, 6]
        names = {rs["metadata"]["name"] for rs in sets}
        pods = (await reader.list(PODS, namespace="default"))["items"]
        assert all(p["metadata"]["ownerReferences"][0]["name"] in names for p in pods)
    finally:
        await reader.close()
