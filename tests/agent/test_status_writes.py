"""A GitSource's status writes never undo each other: a report state written while a
sync's status is being written (the reporter runs beside the sync) is laid over the status
the sync wrote, not over the one before it (the cluster target lost lastSyncedRevision)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from gitkrm.agent.agent import Agent, AgentOptions
from gitkrm.agent.config import SourceConfig
from gitkrm.agent.status import gitsource_ref
from gitkrm.errors import NotFound

REPORT = {"url": "https://git.example.org/fleet", "pending": True, "failures": 0}


async def _agent(tmp_path: Path, agents: list[Agent]) -> Agent:
    """An opened agent of one directory source `apps` (no watch; an hour's interval)."""
    root = tmp_path / "manifests"
    root.mkdir()
    source = SourceConfig(name="apps", url=str(root), ref=None, interval=3600.0)
    agent = Agent(AgentOptions(state_dir=tmp_path / "state", agent_name="unit",
                               sources=(source,), watch_changes=False))  # fmt: skip
    agents.append(agent)
    await agent.open()
    return agent


async def test_a_report_state_and_a_sync_status_written_together_both_stay(
    tmp_path: Path, agents: list[Agent]
) -> None:
    agent = await _agent(tmp_path, agents)
    runner = agent.runners["apps"]
    real = runner.writer.write
    arrived, gate = asyncio.Event(), asyncio.Event()

    async def first_held(status: Mapping[str, Any]) -> dict[str, Any]:
        if not arrived.is_set():  # the report's write waits until both are under way
            arrived.set()
            await gate.wait()
        return await real(status)

    runner.writer.write = first_held  # type: ignore[method-assign]
    report = asyncio.create_task(runner.set_report_state(REPORT))
    syncing = asyncio.create_task(runner._progressing("0" * 40))
    await asyncio.wait_for(arrived.wait(), timeout=10)
    gate.set()
    await asyncio.wait_for(asyncio.gather(report, syncing), timeout=10)
    status = (await agent.store.get(gitsource_ref("apps")))["status"]
    assert status["report"] == REPORT
    assert {c["type"] for c in status["conditions"]} >= {"Reconciling"}
    assert runner.status == status


async def test_a_write_under_way_when_the_source_goes_does_not_bring_its_gitsource_back(
    tmp_path: Path, agents: list[Agent]
) -> None:
    """A removed child's GitSource stayed (or came back) when a report state was being
    written as its source stopped: the writer re-creates a GitSource it finds deleted."""
    agent = await _agent(tmp_path, agents)
    runner = agent.runners["apps"]
    real = runner.writer.write
    arrived, gate = asyncio.Event(), asyncio.Event()

    async def held(status: Mapping[str, Any]) -> dict[str, Any]:
        arrived.set()
        await gate.wait()
        return await real(status)

    runner.writer.write = held  # type: ignore[method-assign]
    report = asyncio.create_task(runner.set_report_state(REPORT))
    await asyncio.wait_for(arrived.wait(), timeout=10)
    closing = asyncio.create_task(runner.close())  # waits for the write under way
    gate.set()
    await asyncio.wait_for(asyncio.gather(report, closing), timeout=10)
    await agent.store.delete(gitsource_ref("apps"))  # as the tree removes it
    await runner.set_report_state({**REPORT, "failures": 1})  # too late: nothing written
    with pytest.raises(NotFound):  # the GitSource of a closed source is not written back
        await agent.store.get(gitsource_ref("apps"))
