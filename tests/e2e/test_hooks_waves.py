"""Hooks and health-gated waves through the real `gitkrm run` agent on a real Git remote:
a PreSync hook runs once per revision (not on every 1 s drift check), its run is in the
GitSource status and the git note; a new commit cancels a wait on health and is applied."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from gitkrm.krm import GVK, ObjectRef
from tests.e2e.e2e_support import (
    api_patch,
    cm_ref,
    json_agent,
    read_object,
    read_status,
    reading,
    wait_for,
    wait_synced,
)
from tests.e2e.manifests import configmap, deployment
from tests.report.report_helpers import read_note
from tests.report.report_helpers import read_status as read_status_file
from tests.source.source_gitrepo import RemoteRepo
from tests.support.net import free_port

JOBS = GVK(group="batch", version="v1", kind="Job")
DB = ObjectRef(group="apps", kind="Deployment", name="db", namespace="default")

PRESYNC = """\
apiVersion: batch/v1
kind: Job
metadata:
  generateName: migrate-
  namespace: default
  annotations: {argocd.argoproj.io/hook: PreSync}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: busybox, command: ["true"]}
"""


def syncs(server: str) -> float:
    """How many syncs and drift checks of the source the agent counted."""
    with urllib.request.urlopen(f"{server}/metrics", timeout=10) as resp:
        text: str = resp.read().decode()
    counted = [
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("gitkrm_sync_duration_seconds_count") and 'source="default"' in line
    ]
    return sum(counted)


async def job_names(state: Path) -> set[str]:
    async with reading(state) as store:
        listed = await store.list(JOBS, namespace="default")
    return {j["metadata"]["name"] for j in listed["items"]}


async def test_a_presync_hook_runs_once_per_revision(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    repo.write("hook.yaml", PRESYNC)
    repo.write("app.yaml", configmap("app", {"v": "1"}))
    first = repo.commit("a PreSync hook")
    repo.push()
    port = free_port()
    with json_agent(repo.url, state=state, tmp_path=tmp_path, interval="1s", port=port) as proc:
        await wait_synced(state, first, what="the first sync")

        async def drift_checks() -> bool:  # the agent's passes, counted in /metrics
            return syncs(f"http://127.0.0.1:{port}") >= 5

        await wait_for(drift_checks, within=60, what="five passes")
        assert len(await job_names(state)) == 1  # not one per pass
        status = await read_status(state)
        assert status["hooks"]["revision"] == first
        [run] = status["hooks"]["runs"]
        assert run["phase"] == "PreSync"
        assert run["result"] == "Succeeded"
        assert run["name"].startswith("migrate-")
        assert run["name"] in await job_names(state)

        async def noted() -> bool:
            note = read_note(repo.bare, "e2e", first)
            return note is not None and "hooks" in note["sources"]["default"]

        await wait_for(noted, what="the note of the first commit")
        note = read_note(repo.bare, "e2e", first)
        assert note is not None
        assert note["sources"]["default"]["hooks"] == [run]

        async def in_status_file() -> bool:
            doc = read_status_file(repo.bare, "e2e")
            return doc is not None and doc["sources"]["default"].get("hooks") == [run]

        await wait_for(in_status_file, what="the hook run in the status file")
        repo.write("app.yaml", configmap("app", {"v": "2"}))
        second = repo.commit("a new revision")
        repo.push()
        await wait_synced(state, second, what="the second commit")
        assert len(await job_names(state)) == 2  # a new revision: the hook ran again
        # A sync request runs the hooks of the same revision again.
        source = "/apis/gitkrm.io/v1alpha1/namespaces/gitkrm-system/gitsources/default"
        asked = {"metadata": {"annotations": {"gitkrm.io/requestedAt": "again"}}}
        api_patch(f"http://127.0.0.1:{port}", source, asked)

        async def handled() -> bool:
            return (await read_status(state)).get("lastHandledRequestedAt") == "again"

        await wait_for(handled, what="the request handled")
        assert len(await job_names(state)) == 3
    assert proc.proc.returncode == 0


async def test_a_new_commit_cancels_a_wait_on_health(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    stuck = deployment(
        "db",
        replicas=1,
        image="postgres:16",
        template_annotations={"gitkrm.io/simulate": "pending"},
    )
    repo.write("db.yaml", stuck)  # wave 0
    repo.write("app.yaml", configmap("app", {"v": "1"}, wave=1))
    repo.commit("a Deployment that never becomes Available")
    repo.push()
    # healthTimeout is 5m (the default): only a cancelled wait lets the fix in quickly.
    with json_agent(repo.url, state=state, tmp_path=tmp_path, interval="2s") as proc:

        async def waiting() -> bool:
            return await read_object(state, DB) is not None

        await wait_for(waiting, within=60, what="wave 0 applied")
        assert await read_object(state, cm_ref("app")) is None  # wave 1 waits
        repo.write("db.yaml", deployment("db", replicas=1, image="postgres:16"))
        repo.write("app.yaml", configmap("app", {"v": "2"}, wave=1))
        fix = repo.commit("the fix")
        repo.push()

        await wait_synced(state, fix, within=90, what="the fix synced (well before 5m)")
        app = await read_object(state, cm_ref("app"))
        assert app is not None
        assert app["data"] == {"v": "2"}
        assert any(r.get("trigger") == "cancelled" for r in proc.records())
    assert proc.proc.returncode == 0
