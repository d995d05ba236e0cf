"""The long-lived agent: immediate syncs on local changes, readers while it runs, SIGTERM."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import yaml

from tests.e2e.e2e_support import (
    api_patch,
    cm_ref,
    gitkrm,
    kubeconfig_server,
    read_object,
    read_status,
    run_agent,
    wait_for,
    wait_synced,
)
from tests.e2e.manifests import configmap
from tests.source.source_gitrepo import RemoteRepo
from tests.support.net import free_port


async def _data(state: Path, name: str) -> dict[str, str] | None:
    obj = await read_object(state, cm_ref(name))
    return None if obj is None else dict(obj.get("data") or {})


async def test_plain_directory_edits_are_synced_at_once(tmp_path: Path) -> None:
    src = tmp_path / "manifests"
    src.mkdir()
    (src / "a.yaml").write_text(configmap("a", {"v": "1"}))
    state = tmp_path / "state"
    agent = run_agent("--repo", str(src), state=state, tmp_path=tmp_path)
    with agent:

        async def has(name: str, value: str) -> bool:
            return (await _data(state, name) or {}).get("v") == value

        await wait_for(lambda: has("a", "1"), what="the first sync")
        (src / "b.yaml").write_text(configmap("b", {"v": "2"}))
        (src / "a.yaml").write_text(configmap("a", {"v": "3"}))
        await wait_for(lambda: has("b", "2"), what="a new file synced (interval is 1h)")
        await wait_for(lambda: has("a", "3"), what="an edit synced")
        (src / "b.yaml").unlink()

        async def pruned() -> bool:
            return await _data(state, "b") is None

        await wait_for(pruned, what="a deleted file pruned")

        # Readers work while the agent holds the store.
        res = gitkrm("status", "--state", str(state), "-o", "json", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        (source,) = json.loads(res.stdout)["sources"]
        assert source["name"] == "default"
        assert source["url"] == str(src)
        assert source["ready"] == "True"
        res = gitkrm("get", "configmaps", "a", "-o", "yaml", "--state", str(state), cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        assert yaml.safe_load(res.stdout)["data"] == {"v": "3"}
        # A second writer is refused, clearly.
        res = gitkrm("run", "--once", "--repo", str(src), "--state", str(state), cwd=tmp_path)
        assert res.returncode == 2
        assert "in use by another gitkrm process" in res.stderr
        assert agent.stop() == 0
    assert "stopped" in agent.log()


async def test_a_push_to_a_local_repository_is_synced_at_once(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    repo.write("a.yaml", configmap("a", {"v": "1"}))
    first = repo.commit("a")
    repo.push()
    agent = run_agent("--repo", repo.url, state=state, tmp_path=tmp_path)
    with agent:
        await wait_synced(state, first, what="the first sync")
        repo.write("a.yaml", configmap("a", {"v": "2"}))
        second = repo.commit("a=2")
        repo.push()
        await wait_synced(state, second, what="the pushed commit (interval is 1h)")
        assert await _data(state, "a") == {"v": "2"}
    assert agent.proc.returncode == 0


async def test_drift_requests_and_suspend_through_the_api(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    repo.write("app.yaml", configmap("app", {"color": "blue"}))
    first = repo.commit("blue")
    repo.push()
    port = free_port()
    agent = run_agent(
        "--repo", repo.url, "--log-format", "json", state=state, tmp_path=tmp_path, port=port
    )
    source = "/apis/gitkrm.io/v1alpha1/namespaces/gitkrm-system/gitsources/default"
    app = "/api/v1/namespaces/default/configmaps/app"
    with agent:

        async def status_is(**want: object) -> bool:
            s = await read_status(state)
            return all(s.get(k) == v for k, v in want.items())

        await wait_for(lambda: status_is(lastSyncedRevision=first), what="the first sync")
        server = kubeconfig_server(state)
        assert server == f"http://127.0.0.1:{port}"

        # A live edit, then a sync request (the interval is 1h): Git's field is set back,
        # the field Git never set is kept.
        api_patch(server, app, {"data": {"color": "red", "extra": "kept"}})
        api_patch(server, source, {"metadata": {"annotations": {"gitkrm.io/requestedAt": "r1"}}})
        await wait_for(lambda: status_is(lastHandledRequestedAt="r1"), what="the request handled")
        assert await _data(state, "app") == {"color": "blue", "extra": "kept"}

        # Suspended: a push is seen but not synced.
        api_patch(server, source, {"spec": {"suspend": True}})
        repo.write("app.yaml", configmap("app", {"color": "green"}))
        second = repo.commit("green")
        repo.push()

        def skipped() -> bool:
            return any(
                r.get("msg") == "suspended: not synced" and "change" in r.get("trigger", "")
                for r in agent.records()
            )

        await wait_for(lambda: _true(skipped()), what="the push seen while suspended")
        assert (await _data(state, "app") or {}).get("color") == "blue"
        assert (await read_status(state)).get("lastSyncedRevision") == first

        # Resumed with a 1s interval: the push is synced, and drift is now set back on every
        # interval although Git does not move.
        api_patch(server, source, {"spec": {"suspend": False, "interval": "1s"}})
        await wait_for(lambda: status_is(lastSyncedRevision=second), what="the resumed sync")
        api_patch(server, app, {"data": {"color": "red"}})

        async def set_back() -> bool:
            return (await _data(state, "app") or {}).get("color") == "green"

        await wait_for(set_back, what="the drift set back at the next interval")
        # The agent's syncs are counted in the API server's /metrics.
        metrics = _metrics(server)
        counted = [
            line
            for line in metrics.splitlines()
            if line.startswith("gitkrm_sync_duration_seconds_count")
            and 'source="default"' in line
            and 'result="Succeeded"' in line
        ]
        assert counted, metrics
        assert float(counted[0].rsplit(" ", 1)[1]) >= 2
        assert agent.stop() == 0
    assert (await read_status(state)).get("observedGeneration") == 3


def _metrics(server: str) -> str:
    with urllib.request.urlopen(f"{server}/metrics", timeout=10) as resp:
        text: str = resp.read().decode()
    return text


async def _true(value: bool) -> bool:
    return value
