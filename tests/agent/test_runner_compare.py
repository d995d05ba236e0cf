"""A source that compares but does not apply (an Argo CD Application without automated
sync), and one that reports drift without setting it back (`selfHeal: false`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.agent.agent import Agent, AgentOptions
from gitkrm.agent.config import SourceConfig
from gitkrm.agent.scheduler import Trigger
from gitkrm.agent.status import gitsource_ref
from gitkrm.errors import NotFound
from gitkrm.krm import ObjectRef

CM = ObjectRef(group="", kind="ConfigMap", name="settings", namespace="default")


def _cm(value: str) -> str:
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\n"
        f"data:\n  mode: {value}\n"
    )


async def _agent(
    agents: list[Agent], tmp_path: Path, *, automated: bool = True, self_heal: bool = True
) -> Agent:
    root = tmp_path / "manifests"
    root.mkdir(parents=True)
    (root / "cm.yaml").write_text(_cm("a"))
    source = SourceConfig(
        name="apps", url=str(root), ref=None, interval=3600.0, automated=automated,
        self_heal=self_heal,
    )  # fmt: skip
    agent = Agent(
        AgentOptions(
            state_dir=tmp_path / "state", agent_name="unit", sources=(source,),
            watch_changes=False,
        )
    )  # fmt: skip
    agents.append(agent)
    await agent.open()
    return agent


async def test_without_automated_sync_a_revision_is_compared_never_applied(
    tmp_path: Path, agents: list[Agent]
) -> None:
    agent = await _agent(agents, tmp_path, automated=False)
    [outcome] = await agent.sync_once()
    assert outcome.succeeded
    assert outcome.out_of_sync == ("create: ConfigMap default/settings",)
    with pytest.raises(NotFound):
        await agent.store.get(CM)
    status = (await agent.store.get(gitsource_ref("apps")))["status"]
    assert status["outOfSync"] == ["create: ConfigMap default/settings"]
    [ready] = status["conditions"]
    assert ready["message"].endswith("1 object(s) differ, not applied")
    # Every pass compares again (nothing was synced that a drift check could follow).
    again = await agent.runners["apps"].reconcile(frozenset({Trigger.INTERVAL}))
    assert again is not None
    assert again.out_of_sync == ("create: ConfigMap default/settings",)
    with pytest.raises(NotFound):
        await agent.store.get(CM)
    # A request (gitkrm.io/requestedAt) syncs it once, as Argo CD's manual sync.
    synced = await agent.runners["apps"].reconcile(frozenset({Trigger.REQUEST}))
    assert synced is not None
    assert synced.out_of_sync is None
    assert (await agent.store.get(CM))["data"] == {"mode": "a"}
    status = (await agent.store.get(gitsource_ref("apps")))["status"]
    assert "outOfSync" not in status
    after = await agent.runners["apps"].reconcile(frozenset({Trigger.INTERVAL}))
    assert after is not None
    assert after.out_of_sync == ()  # compared again: in sync


async def test_without_self_heal_drift_is_reported_not_set_back(
    tmp_path: Path, agents: list[Agent]
) -> None:
    agent = await _agent(agents, tmp_path, self_heal=False)
    [outcome] = await agent.sync_once()
    assert outcome.succeeded
    assert outcome.out_of_sync is None  # a new revision is applied
    live = await agent.store.get(CM)
    live["data"]["mode"] = "changed-by-hand"
    await agent.store.update(live)
    drift = await agent.runners["apps"].reconcile(frozenset({Trigger.INTERVAL}))
    assert drift is not None
    assert drift.out_of_sync == ("patch: ConfigMap default/settings",)
    assert (await agent.store.get(CM))["data"]["mode"] == "changed-by-hand"
    # The same with self-heal: the drift check sets it back.
    healing = await _agent(agents, tmp_path / "heal")
    await healing.sync_once()
    live = await healing.store.get(CM)
    live["data"]["mode"] = "changed-by-hand"
    await healing.store.update(live)
    healed = await healing.runners["apps"].reconcile(frozenset({Trigger.INTERVAL}))
    assert healed is not None
    assert healed.out_of_sync is None
    assert (await healing.store.get(CM))["data"]["mode"] == "a"
