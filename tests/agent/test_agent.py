"""The Agent in-process: GitSource objects, one pass, graceful stop mid-sync, spec edits."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest

from gitkrm.agent.agent import Agent, AgentOptions, exit_code
from gitkrm.agent.config import SourceConfig
from gitkrm.agent.crd import GITSOURCE_GVK, NAMESPACE
from gitkrm.agent.scheduler import Trigger
from gitkrm.agent.shutdown import Shutdown
from gitkrm.agent.status import gitsource_ref
from gitkrm.agent.term import Term
from gitkrm.krm import GVK, ObjectRef
from gitkrm.source import Snapshot
from gitkrm.store import Store
from gitkrm.sync.results import SyncResult
from tests.agent.agent_waits import wait_until
from tests.report.report_helpers import objects_of, read_note
from tests.sync.sync_helpers import Remote

CM = GVK(group="", version="v1", kind="ConfigMap")


def _cms(prefix: str, count: int, wave: int = 0) -> str:
    return "---\n".join(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {prefix}-{i}\n  namespace: default\n"
        f"  annotations: {{gitkrm.io/wave: '{wave}'}}\ndata: {{i: '{i}'}}\n"
        for i in range(count)
    )


def _plain_dir(tmp_path: Path, count: int) -> Path:
    """A plain directory (no Git) holding `a.yaml`: the ConfigMaps a-0 .. a-<count - 1>."""
    root = tmp_path / "m"
    root.mkdir()
    (root / "a.yaml").write_text(_cms("a", count))
    return root


def _dir_source(name: str, root: Path, **kw: Any) -> SourceConfig:
    return SourceConfig(name=name, url=str(root), ref=None, **kw)


async def _open(
    agents: list[Agent], state: Path, *sources: SourceConfig, watch_changes: bool = True
) -> Agent:
    options = AgentOptions(
        state_dir=state, agent_name="unit", sources=sources, watch_changes=watch_changes
    )
    agent = Agent(options)
    agents.append(agent)
    await agent.open()
    return agent


def _store(agent: Agent) -> Store:
    return agent.store


def _term(agent: Agent) -> Term:
    assert agent.term is not None  # the embedded target's one term, begun at open
    return agent.term


async def _count(store: Store) -> int:
    listed = await store.list(CM, "default", label_selector="gitkrm.io/source=apps")
    return len(listed["items"])


async def test_one_pass_writes_objects_and_gitsource_status(
    tmp_path: Path, agents: list[Agent]
) -> None:
    root = _plain_dir(tmp_path, 3)
    agent = await _open(agents, tmp_path / "state", _dir_source("apps", root, interval=5.0))
    outcomes = await agent.sync_once()
    assert exit_code(outcomes) == 0
    store = _store(agent)
    assert await _count(store) == 3
    src = await store.get(gitsource_ref("apps"))
    assert src["spec"]["url"] == str(root)
    assert src["spec"]["interval"] == "5s"
    assert "ref" not in src["spec"]  # a plain directory
    assert src["metadata"]["labels"]["gitkrm.io/agent"] == "unit"
    status = src["status"]
    assert status["result"] == "Succeeded"
    assert status["counts"]["created"] == 3
    assert status["lastSyncedRevision"] == outcomes[0].revision
    assert [c["type"] for c in status["conditions"]] == ["Ready"]


async def test_unconfigured_sources_lose_their_gitsource_not_their_objects(
    tmp_path: Path, agents: list[Agent]
) -> None:
    root = _plain_dir(tmp_path, 2)
    state = tmp_path / "state"
    first = await _open(agents, state, _dir_source("apps", root), _dir_source("old", root / "x"))
    (root / "x").mkdir()
    await first.sync_once()
    await first.close()
    second = await _open(agents, state, _dir_source("apps", root))
    listed = await _store(second).list(GITSOURCE_GVK, NAMESPACE)
    assert [o["metadata"]["name"] for o in listed["items"]] == ["apps"]
    assert await _count(_store(second)) == 2


async def test_stop_lets_the_sync_under_way_finish(
    tmp_path: Path, agents: list[Agent], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "m"
    root.mkdir()
    for w in range(20):  # one transaction per wave
        (root / f"w{w:02d}.yaml").write_text(_cms(f"w{w:02d}", 50, wave=w))
    agent = await _open(
        agents, tmp_path / "state", _dir_source("apps", root, interval=3600.0), watch_changes=False
    )
    shutdown = Shutdown()
    engine = agent.runners["apps"].engine
    original = engine.sync

    async def sync_then_stopped(snapshot: Snapshot, **kw: Any) -> SyncResult:
        shutdown.request()  # as a SIGTERM arriving mid-sync
        await asyncio.sleep(0)  # the agent sees it before the sync goes on
        return await original(snapshot, **kw)

    monkeypatch.setattr(engine, "sync", sync_then_stopped)
    await asyncio.wait_for(agent.run(shutdown), 60)
    store = _store(agent)
    assert await _count(store) == 1000  # the sync under way finished: nothing half-done
    status = (await store.get(gitsource_ref("apps")))["status"]
    assert status["result"] == "Succeeded"
    assert not any(c["type"] == "Reconciling" for c in status["conditions"])


async def test_an_unusable_spec_edit_stalls_the_source(tmp_path: Path, agents: list[Agent]) -> None:
    root = _plain_dir(tmp_path, 1)
    agent = await _open(
        agents, tmp_path / "state", _dir_source("apps", root, interval=3600.0), watch_changes=False
    )
    shutdown = Shutdown()
    running = asyncio.create_task(agent.run(shutdown))
    store = _store(agent)
    try:

        async def status() -> dict[str, Any]:
            return dict((await store.get(gitsource_ref("apps"))).get("status") or {})

        async def synced() -> bool:
            return (await status()).get("result") == "Succeeded"

        await wait_until(synced, what="the first sync")
        live = await store.get(gitsource_ref("apps"))
        live["spec"]["ref"] = {"branch": "main"}  # a plain directory has no branch
        await store.update(live)

        async def stalled() -> bool:
            s = await status()
            return any(c["type"] == "Stalled" for c in s.get("conditions", []))

        await wait_until(stalled, what="Stalled")
        s = await status()
        assert s["observedGeneration"] == 2
        assert "plain directory" in s["lastError"]
        assert s["lastError"].startswith("GitSource spec (generation 2): ")
    finally:
        shutdown.request()
        await asyncio.wait_for(running, 30)
    ref = ObjectRef(group="", kind="ConfigMap", name="a-0", namespace="default")
    assert (await store.get(ref))["data"] == {"i": "0"}


async def test_a_request_made_while_no_agent_ran_is_handled_at_start(
    tmp_path: Path, agents: list[Agent]
) -> None:
    root = _plain_dir(tmp_path, 1)
    state = tmp_path / "state"
    first = await _open(agents, state, _dir_source("apps", root))
    await first.sync_once()
    store = _store(first)
    live = await store.get(gitsource_ref("apps"))
    live["metadata"]["annotations"] = {"gitkrm.io/requestedAt": "while-down"}
    await store.update(live)
    await first.close()
    second = await _open(agents, state, _dir_source("apps", root))
    await second.sync_once()
    status = (await _store(second).get(gitsource_ref("apps")))["status"]
    assert status["lastHandledRequestedAt"] == "while-down"


async def test_a_spec_edit_keeps_the_credentials_of_the_url(
    tmp_path: Path, agents: list[Agent]
) -> None:
    url = "https://bot:s3cret@127.0.0.1:1/apps.git"  # nothing listens: every fetch fails fast
    config = SourceConfig(name="apps", url=url, interval=3600.0)
    agent = await _open(agents, tmp_path / "state", config, watch_changes=False)
    shutdown = Shutdown()
    running = asyncio.create_task(agent.run(shutdown))
    store = _store(agent)
    try:
        live = await store.get(gitsource_ref("apps"))
        assert live["spec"]["url"] == "https://127.0.0.1:1/apps.git"  # stored without secrets
        live["spec"]["suspend"] = True
        await store.update(live)
        await wait_until(lambda: agent.runners["apps"].config.suspend, what="the spec edit")
        assert agent.runners["apps"].config.url == url
        status = (await store.get(gitsource_ref("apps")))["status"]
        assert "s3cret" not in str(status)
    finally:
        shutdown.request()
        await asyncio.wait_for(running, 30)


class _CountingStore:
    """The agent's store, counting the reads of ConfigMaps."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.gets = 0
        self.lists = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def get(self, ref: Any) -> Any:
        self.gets += ref.kind == "ConfigMap"
        return await self._store.get(ref)

    async def list(self, gvk: Any, *args: Any, **kw: Any) -> Any:
        self.lists += gvk.kind == "ConfigMap"
        return await self._store.list(gvk, *args, **kw)


async def test_health_after_a_sync_is_read_a_kind_at_a_time(
    tmp_path: Path, agents: list[Agent]
) -> None:
    """On a cluster a get per object would be thousands of requests after every sync: the
    health of what the sync just wrote is judged from the objects its writes returned, and
    what it did not write is read a kind at a time."""
    root = _plain_dir(tmp_path, 100)
    agent = await _open(agents, tmp_path / "state", _dir_source("apps", root, interval=3600.0))
    runner = agent.runners["apps"]
    counting = _CountingStore(_store(agent))
    runner.store = cast(Store, counting)
    assert exit_code(await agent.sync_once()) == 0
    assert (counting.gets, counting.lists) == (0, 0)  # the writes' answers tell
    assert len(runner.health) == 100
    assert runner.engine.take_live() == {}  # handed over once, not kept
    # Objects the last sync neither wrote nor read are read a kind at a time: one list.
    health = await runner._read_health(tuple(runner.health))
    assert (counting.gets, counting.lists) == (0, 1)
    assert health == runner.health
    assert runner.health_summary()["objects"] == 100
    # A drift check that finds nothing reads nothing: the follower's watches keep health.
    counting.gets = counting.lists = 0
    outcome = await runner.reconcile(frozenset({Trigger.INTERVAL}))
    assert outcome is not None
    assert outcome.succeeded
    assert (counting.gets, counting.lists) == (0, 0)
    assert len(runner.health) == 100


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
"""


async def test_run_once_reports_the_health_read_at_sync_and_follows_none(
    tmp_path: Path, agents: list[Agent]
) -> None:
    """`run --once` without --wait: the reporter comes with the first source that syncs,
    the note carries the health read right after the sync, and no follower watches on;
    a run with nothing to do makes no reporter at all."""
    remote = Remote(tmp_path / "repo")
    remote.write("web.yaml", DEPLOYMENT)
    head = remote.commit()
    options = AgentOptions(
        state_dir=tmp_path / "state",
        agent_name="unit",
        sources=(SourceConfig(name="apps", url=remote.url),),
        skip_unchanged=True,
        follow_health=False,
    )
    agent = Agent(options)
    agents.append(agent)
    await agent.open()
    term = _term(agent)
    assert term.reporter is None
    assert exit_code(await agent.sync_once()) == 0
    assert term.reporter is not None
    assert term.follower is None
    # Nothing syncs any more: the engine (its drift informers) is gone before the flush.
    engines: list[object] = []
    flush = term._reports.end

    async def recording(**kw: Any) -> None:
        engines.extend(r._sync_engine for r in term.runners.values())
        await flush(**kw)

    term._reports.end = recording
    await agent.close()
    assert agent.term is None
    assert engines == [None]
    note = read_note(remote.bare, "unit", head)
    assert note is not None
    assert objects_of(note["sources"]["apps"]) == {"Deployment default/web": "InProgress"}
    again = Agent(options)
    agents.append(again)
    await again.open()
    [outcome] = await again.sync_once()
    assert outcome.nothing_changed
    assert _term(again).reporter is None
