"""The agent on the cluster target (`ClusterTarget`), in-process: it syncs only while holding
the Lease, a lost Lease cancels the sync in flight and makes it a candidate again, a stop
releases the Lease.

The "cluster" is a SQLite store opened through `target_url` (the agent takes any store URL
there): leader election and the cluster code path are generic over the Store protocol.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gitkrm.agent.agent import Agent, AgentOptions, exit_code
from gitkrm.agent.cluster import ClusterTarget
from gitkrm.agent.config import SourceConfig
from gitkrm.agent.leader import LeaseTimings, micro_time
from gitkrm.agent.shutdown import Shutdown
from gitkrm.errors import BadRequest
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store import Store
from gitkrm.sync.engine import SyncEngine
from tests.agent.agent_waits import wait_until

CM = GVK(group="", version="v1", kind="ConfigMap")
QUICK = LeaseTimings(lease_duration=1, renew_deadline=0.5, retry_period=0.1)
LEASE = ObjectRef(
    group="coordination.k8s.io", kind="Lease", name="gitkrm-unit", namespace="gitkrm-system"
)


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    manifests = tmp_path / "m"
    manifests.mkdir()
    (manifests / "a.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata: {v: '1'}\n"
    )
    options = AgentOptions(
        state_dir=tmp_path / "state",
        agent_name="unit",
        sources=(SourceConfig(name="apps", url=str(manifests), ref=None),),
        target_url="sqlite:///" + str(tmp_path / "cluster.db"),
        lease=QUICK,
        identity="me",
        watch_changes=False,
        report=False,
        grace=5,
    )
    a = Agent(options)
    await a.open()
    yield a
    await a.close()


def _store(agent: Agent) -> Store:
    return agent.store


def _target(agent: Agent) -> ClusterTarget:
    assert isinstance(agent.target, ClusterTarget)
    return agent.target


async def _holder(agent: Agent) -> str:
    lease = await _store(agent).get(LEASE)
    return str(lease["spec"].get("holderIdentity") or "")


async def _take_lease(agent: Agent, holder: str) -> None:
    """Someone else writes the Lease (another replica for 30 s, or a release when holder
    is '')."""
    store = _store(agent)
    lease = await store.get(LEASE)
    now = micro_time()
    lease["spec"].update(
        {
            "holderIdentity": holder,
            "renewTime": now,
            "acquireTime": now,
            "leaseDurationSeconds": 30 if holder else 1,
        }
    )
    await store.update(lease)


class BlockedSync:
    """Makes `SyncEngine.sync` wait until released; records whether it was cancelled."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = 0
        real = SyncEngine.sync

        async def sync(engine: SyncEngine, snapshot: Any, *args: Any, **kwargs: Any) -> Any:
            self.started.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            return await real(engine, snapshot, *args, **kwargs)

        monkeypatch.setattr(SyncEngine, "sync", sync)


def test_no_bundled_controllers_on_a_cluster(tmp_path: Path) -> None:
    from gitkrm.controllers import ControllerOptions

    with pytest.raises(BadRequest, match="embedded target only"):
        Agent(
            AgentOptions(
                state_dir=tmp_path,
                agent_name="unit",
                sources=(),
                target_url="kube://",
                controllers=ControllerOptions(),
            )
        )


async def test_a_lost_lease_cancels_the_sync_and_the_agent_waits_as_a_candidate(
    agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = BlockedSync(monkeypatch)
    shutdown = Shutdown()
    running = asyncio.create_task(agent.run(shutdown))
    try:
        await asyncio.wait_for(blocked.started.wait(), 10)
        assert await _holder(agent) == "me"
        assert _target(agent).readiness() == (False, "leading: the first sync is under way")

        await _take_lease(agent, "intruder")
        await wait_until(lambda: blocked.cancelled == 1, what="the sync to be cancelled")
        await wait_until(lambda: not agent.runners, what="the term to end")
        assert not _target(agent).leading
        assert _target(agent).readiness() == (True, "standby: the Lease is held by intruder")
        listed = await _store(agent).list(CM, "default", label_selector="gitkrm.io/source=apps")
        assert listed["items"] == []  # nothing was written by the cancelled sync

        # The other replica releases: this one leads again and syncs to the end.
        blocked.release.set()
        await _take_lease(agent, "")
        await wait_until(
            lambda: agent.term is not None and bool(agent.runners) and agent.term.synced_once(),
            what="a sync in the new term",
        )
        assert _target(agent).leading
        assert await _holder(agent) == "me"
        assert _target(agent).readiness() == (True, "leading")
        a = await _store(agent).get(
            ObjectRef(group="", kind="ConfigMap", name="a", namespace="default")
        )
        assert a["data"] == {"v": "1"}
    finally:
        shutdown.request()
        await asyncio.wait_for(running, 10)
    await agent.close()
    assert await _holder_after_close(agent) == ""


async def _holder_after_close(agent: Agent) -> str:
    """The Lease as the store saw it last (the agent closed its store: reopen it)."""
    from gitkrm.store import open_store

    assert agent.options.target_url is not None
    store = await open_store(agent.options.target_url)
    try:
        lease = await store.get(LEASE)
    finally:
        await store.close()
    return str(lease["spec"].get("holderIdentity") or "")


async def test_run_once_fails_when_the_lease_is_lost_mid_sync(
    agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = BlockedSync(monkeypatch)
    syncing = asyncio.create_task(agent.sync_once(Shutdown()))
    await asyncio.wait_for(blocked.started.wait(), 10)
    await _take_lease(agent, "intruder")
    outcomes = await asyncio.wait_for(syncing, 10)
    assert outcomes is not None  # no stop was asked for
    assert blocked.cancelled == 1
    assert exit_code(outcomes) == 1
    assert "was lost mid-sync" in outcomes[-1].errors[0]


async def test_run_once_waits_for_the_lease_and_can_be_stopped(agent: Agent) -> None:
    store = _store(agent)
    await store.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "gitkrm-system"},
        }
    )
    now = micro_time()
    await store.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "gitkrm-unit", "namespace": "gitkrm-system"},
            "spec": {
                "holderIdentity": "other",
                "leaseDurationSeconds": 30,
                "renewTime": now,
                "acquireTime": now,
            },
        }
    )
    shutdown = Shutdown()
    syncing = asyncio.create_task(agent.sync_once(shutdown))
    await wait_until(lambda: _target(agent).elector.holder == "other")
    assert not syncing.done()
    shutdown.request()
    assert await asyncio.wait_for(syncing, 5) == []
    assert not agent.runners  # no term began: nothing synced
    assert agent.term is None
    assert not _target(agent).leading


async def test_gitsource_status_is_kept_once_the_crd_is_served(
    agent: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    from gitkrm.agent import crd
    from gitkrm.agent.status import gitsource_ref

    outcomes = await agent.sync_once(Shutdown())
    assert outcomes is not None
    assert exit_code(outcomes) == 0
    assert agent.term is not None
    assert not agent.term.gitsources  # a fresh "cluster": no GitSource CRD
    await crd.install(_store(agent))  # as the Helm chart would
    await agent.end(flush=True)
    assert agent.term is None
    term = await agent.begin()  # the next term sees the kind
    assert term.gitsources
    outcomes = await term.sync_all(None, [])
    assert exit_code(outcomes) == 0
    status = (await _store(agent).get(gitsource_ref("apps")))["status"]
    assert status["result"] == "Succeeded"
    records = caplog.get_records("setup") + caplog.get_records("call")  # open(), then terms
    said = [r for r in records if "no GitSource kind" in r.getMessage()]
    assert len(said) == 1
