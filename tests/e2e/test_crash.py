"""`kill -9` during a large apply, then a restart: it converges, no orphans, no duplicates.

The revision is spread over waves, each applied as one transaction, so the kill lands with
some waves written and others not; the inventory, written as the union of old and new
before any object, is what lets the restart prune what the killed run left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from gitkrm.sync.pool import worker_count
from tests.e2e.e2e_support import (
    CM,
    gitkrm,
    kill_session,
    names,
    reading,
    start,
    store_ready,
    wait_for,
)
from tests.e2e.manifests import many_configmaps
from tests.source.source_gitrepo import RemoteRepo

FILES = 40
PER_FILE = 50


SELECTOR = "gitkrm.io/source=default"


async def _count(state: Path) -> int:
    async with reading(state) as store:
        listed = await store.list(CM, "default", label_selector=SELECTOR)
    return len(listed["items"])


async def test_kill_9_during_a_large_apply_then_restart(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    for f in range(FILES):  # one wave per file: one transaction each
        repo.write(f"cms/part-{f:02d}.yaml", many_configmaps(f"a{f:02d}", PER_FILE, wave=f))
    repo.commit("a large revision")
    repo.push()
    total = FILES * PER_FILE
    args = ["run", "--once", "--repo", repo.url, "--state", str(state), "--agent-name", "e2e"]
    proc = start(*args, cwd=tmp_path)
    try:
        await wait_for(lambda: store_ready(state), within=60, what="the store")
        async with reading(state) as store:
            # Kill as soon as the first wave is in: the others are still to come.
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline:
                first = await store.list(CM, "default", label_selector=SELECTOR, limit=1)
                if first["items"]:
                    break
                await asyncio.sleep(0.002)
            # As a container runtime or systemd kills: every process of the agent at once.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    finally:
        kill_session(proc)
    partial = await _count(state)
    assert proc.returncode == -signal.SIGKILL
    assert 0 < partial < total, partial

    # The next revision drops half the files and adds new ones; the restart converges on it.
    for f in range(0, FILES, 2):
        repo.remove(f"cms/part-{f:02d}.yaml")
    repo.write("cms/new.yaml", many_configmaps("new", 50))
    head = repo.commit("half of it, and something new")
    repo.push()
    res = gitkrm(*args, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    expected = {f"default/a{f:02d}-{i}" for f in range(1, FILES, 2) for i in range(PER_FILE)}
    expected |= {f"default/new-{i}" for i in range(50)}
    async with reading(state) as store:
        assert await names(store, CM, source="default") == expected  # no orphans
        listed = await store.list(CM, "default")
        all_names = [o["metadata"]["name"] for o in listed["items"]]
        assert len(all_names) == len(set(all_names))
        inv = await store.list(
            CM, "gitkrm-system", label_selector="cli-utils.sigs.k8s.io/inventory-id=e2e.default"
        )
    keys = [k for item in inv["items"] for k in (item.get("data") or {})]
    assert len(keys) == len(set(keys)) == len(expected)  # the inventory holds each once
    assert f"default: synced revision {head[:12]}" in res.stdout


def _forked_workers(pid: int) -> set[int]:
    """The children of `pid` that are forks of it (its render workers, not `git` runs)."""
    out: set[int] = set()
    with contextlib.suppress(OSError):
        own = Path(f"/proc/{pid}/cmdline").read_bytes()
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            for c in task.read_text().split():
                with contextlib.suppress(OSError):
                    if Path(f"/proc/{c}/cmdline").read_bytes() == own:
                        out.add(int(c))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_kill_9_of_the_agent_alone_takes_its_render_workers_along(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    """Only the agent's pid is killed (an OOM kill) while its forked render workers live:
    they die with it instead of lingering, and a restart at once gets the store (no worker
    holds a copy of its writer lock) and converges."""
    if worker_count() < 2:
        pytest.skip("render workers run only on machines with two cores or more")
    for f in range(FILES):
        repo.write(f"cms/part-{f:02d}.yaml", many_configmaps(f"w{f:02d}", PER_FILE, wave=f))
    repo.commit("a revision big enough for the render workers")
    repo.push()
    args = ["run", "--once", "--repo", repo.url, "--state", str(state), "--agent-name", "e2e"]
    proc = start(*args, cwd=tmp_path)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            # The pool's workers: forks that stay (a `git` run is a fork of the agent too,
            # for the instant before its exec).
            workers = _forked_workers(proc.pid)
            if len(workers) >= worker_count():
                await asyncio.sleep(0.05)
                workers &= _forked_workers(proc.pid)
                if len(workers) >= worker_count():
                    break
            await asyncio.sleep(0.005)
        assert len(workers) >= worker_count(), "the agent started no render workers"
        os.kill(proc.pid, signal.SIGKILL)  # the agent alone, not its process group
        proc.wait(10)
        await wait_for(lambda: _none_alive(workers), within=10, what="the workers to die")
        res = gitkrm(*args, cwd=tmp_path)
        assert res.returncode == 0, res.stdout + res.stderr
        expected = {f"default/w{f:02d}-{i}" for f in range(FILES) for i in range(PER_FILE)}
        async with reading(state) as store:
            assert await names(store, CM, source="default") == expected
    finally:
        kill_session(proc)
        for w in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(w, signal.SIGKILL)


async def _none_alive(pids: set[int]) -> bool:
    return not any(_alive(p) for p in pids)
