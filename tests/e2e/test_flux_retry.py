"""A Flux Kustomization's `retryInterval` in a long-lived agent: a sync that fails (its
GitRepository's branch does not exist yet) is tried again after `retryInterval` (2s), not
at its `interval` (1h), so it succeeds once the branch is pushed. The repository is served
over HTTPS (a local path would be watched for changes, which would hide the retry)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.e2e_support import cm_ref, read_object, run_agent
from tests.e2e.flux_repo import https_remote
from tests.e2e.manifests import configmap, git_repository, kustomization, namespace
from tests.source.source_gitrepo import RemoteRepo
from tests.support.wait import eventually_async

USER, TOKEN = "robot", "tok-retry-5c1f"


async def test_a_failed_sync_is_retried_at_retry_interval(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    apps = RemoteRepo(tmp_path / "apps")  # no branch yet
    served = https_remote(apps.bare.parent, secret="apps-auth", username=USER, password=TOKEN)
    with served as (srv, secret):
        repo.write("clusters/dev/ns.yaml", namespace("flux-system"))
        repo.write("clusters/dev/auth.yaml", secret)
        repo.write("clusters/dev/source.yaml", git_repository(
            "apps", srv.url("remote.git"), secretRef={"name": "apps-auth"}))  # fmt: skip
        repo.write("clusters/dev/apps.yaml", kustomization(
            "apps", "./", source=("GitRepository", "apps"), interval="1h", retryInterval="2s",
            wait=None, timeout=None,
        ))  # fmt: skip
        repo.commit("a Kustomization over a repository not pushed yet")
        repo.push()
        agent = run_agent(
            "--repo", repo.url, "--path", "clusters/dev", "--interpret", "flux",
            "--agent-name", "e2e", state=state, tmp_path=tmp_path,
        )  # fmt: skip
        with agent:
            await eventually_async(
                lambda: "result=Failed" in agent.log(), timeout=60,
                message="the first sync of apps to fail",
            )  # fmt: skip
            apps.publish("the settings", {"cm.yaml": configmap("settings", {"a": "1"})})

            async def applied() -> bool:
                return await read_object(state, cm_ref("settings")) is not None

            await eventually_async(applied, timeout=30, message="apps synced by a retry")
            # the sync's log line is written after its objects
            await eventually_async(lambda: "trigger=retry" in agent.log(), timeout=10,
                                   message="the retry's log line")  # fmt: skip
            assert TOKEN not in agent.log()
