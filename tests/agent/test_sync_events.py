"""Events on the GitSource per change of its sync outcome (Flux's ReconciliationSucceeded /
ReconciliationFailed), none for a pass that ends as the last one did."""

from __future__ import annotations

from pathlib import Path

from gitkrm.agent.agent import Agent, AgentOptions, exit_code
from gitkrm.agent.config import SourceConfig
from gitkrm.agent.status import gitsource_ref
from gitkrm.krm import GVK, Obj

EVENTS = GVK(group="", version="v1", kind="Event")
GOOD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata: {k: v}\n"
BAD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata: [1]\n"


async def _events(agent: Agent) -> list[Obj]:
    src = await agent.store.get(gitsource_ref("apps"))
    listed = await agent.store.list(EVENTS, namespace=src["metadata"].get("namespace"))
    return sorted(
        (e for e in listed["items"] if e["involvedObject"]["uid"] == src["metadata"]["uid"]),
        key=lambda e: e["metadata"]["name"],
    )


async def test_an_event_per_outcome_change(tmp_path: Path, agents: list[Agent]) -> None:
    root = tmp_path / "m"
    root.mkdir()
    (root / "a.yaml").write_text(GOOD)
    source = SourceConfig(name="apps", url=str(root), ref=None, interval=3600.0)
    agent = Agent(AgentOptions(state_dir=tmp_path / "state", agent_name="unit",
                               sources=(source,), watch_changes=False))  # fmt: skip
    agents.append(agent)
    await agent.open()

    assert exit_code(await agent.sync_once()) == 0
    (ok,) = await _events(agent)
    assert ok["type"] == "Normal"
    assert ok["reason"] == "ReconciliationSucceeded"
    assert ok["message"].startswith("Applied revision ")
    assert ok["message"].endswith(": 1 created, 0 configured, 0 pruned, 0 unchanged")
    assert ok["source"] == {"component": "gitkrm"}
    assert ok["involvedObject"]["kind"] == "GitSource"
    assert ok["involvedObject"]["apiVersion"] == "gitkrm.io/v1alpha1"

    # The same outcome again: no new Event.
    assert exit_code(await agent.sync_once()) == 0
    assert len(await _events(agent)) == 1

    (root / "a.yaml").write_text(BAD)
    assert exit_code(await agent.sync_once()) == 1
    events = await _events(agent)
    assert [e["reason"] for e in events] == ["ReconciliationSucceeded", "ReconciliationFailed"]
    failed = events[1]
    assert failed["type"] == "Warning"
    assert "data" in failed["message"]
