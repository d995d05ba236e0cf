"""Two long-lived agents with the same agent name on one cluster: one leads and syncs, the
other waits (ready, as a standby); kill -9 the leader and the other takes over within the
lease duration and syncs a new commit; a graceful stop releases the Lease."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from gitkrm.krm import ObjectRef
from tests.e2e.cluster_support import LEASE_DURATION, LEASE_FLAGS, Cluster, lease_ref
from tests.e2e.e2e_support import AgentProcess, wait_for
from tests.e2e.manifests import configmap
from tests.source.source_gitrepo import RemoteRepo

A = ObjectRef(group="", kind="ConfigMap", name="a", namespace="default")
RETRY = 0.3


def _agent(n: int, repo: RemoteRepo, cluster: Cluster, tmp_path: Path) -> AgentProcess:
    return AgentProcess(
        "run", "--repo", repo.url, "--kubeconfig", str(cluster.kubeconfig),
        "--state", str(tmp_path / f"state{n}"), "--agent-name", "twin", "--interval", "1s",
        "--listen", "127.0.0.1:0", "--log-format", "json", *LEASE_FLAGS,
        cwd=tmp_path, log=tmp_path / f"agent{n}.log",
    )  # fmt: skip


def _said(agent: AgentProcess, text: str) -> str | None:
    """The first log message containing `text`."""
    return next((r["msg"] for r in agent.records() if text in str(r.get("msg"))), None)


def _probe_url(agent: AgentProcess) -> str | None:
    for r in agent.records():
        if str(r.get("msg")).startswith("serving /healthz"):
            return str(r["url"])
    return None


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _syncs(agent: AgentProcess) -> int:
    return sum(1 for r in agent.records() if r.get("msg") == "sync")


async def test_one_leads_the_other_takes_over_when_it_is_killed(
    repo: RemoteRepo, tmp_path: Path
) -> None:
    repo.write("a.yaml", configmap("a", {"v": "1"}))
    first = repo.commit("first")
    repo.push()
    with Cluster(tmp_path / "cluster", controllers=False) as cluster:
        one = _agent(1, repo, cluster, tmp_path)
        two: AgentProcess | None = None
        try:

            async def synced(revision: str) -> bool:
                obj = cluster.get(A)
                return (
                    obj is not None
                    and obj["metadata"]["annotations"].get("gitkrm.io/revision") == revision
                )

            await wait_for(lambda: synced(first), within=30, what="the first agent's sync")
            leader_msg = _said(one, "acquired: leading as ")
            assert leader_msg is not None, one.log()
            one_id = leader_msg.split("leading as ")[1].split(" ")[0]

            two = _agent(2, repo, cluster, tmp_path)

            async def waiting() -> bool:
                assert two is not None
                return _said(two, f"is held by {one_id}: waiting as a candidate") is not None

            await wait_for(waiting, within=30, what="the second agent to wait as a candidate")

            async def probes_up() -> bool:
                return _probe_url(one) is not None and _probe_url(two) is not None

            await wait_for(probes_up, within=10, what="both agents' probes")
            url_one, url_two = _probe_url(one), _probe_url(two)
            assert url_one is not None
            assert url_two is not None
            assert _get(url_one + "/readyz") == (200, "leading")
            assert _get(url_two + "/readyz") == (200, f"standby: the Lease is held by {one_id}")
            assert _get(url_two + "/healthz") == (200, "ok")
            assert "gitkrm_leader 1.0" in _get(url_one + "/metrics")[1]
            assert "gitkrm_leader 0.0" in _get(url_two + "/metrics")[1]
            assert "gitkrm_sync_duration_seconds_count" in _get(url_one + "/metrics")[1]
            assert _syncs(two) == 0  # the standby never synced
            lease = cluster.get(lease_ref("twin")) or {}
            assert lease["spec"]["holderIdentity"] == one_id
            assert lease["spec"]["leaseTransitions"] == 0

            # kill -9 the leader (no release), then commit: the standby takes over and syncs.
            killed_at = time.monotonic()
            one.kill()
            repo.write("a.yaml", configmap("a", {"v": "2"}))
            second = repo.commit("second")
            repo.push()

            async def took_over() -> bool:
                assert two is not None
                return _said(two, "acquired: leading as ") is not None

            await wait_for(took_over, within=20, what="the standby to take over")
            took = time.monotonic() - killed_at
            # The lease duration, then the next retry (period plus jitter), plus slack for a
            # loaded machine: never before the lease expired, never long after.
            assert took < LEASE_DURATION + 2.2 * RETRY + 2.0, f"took over after {took:.1f}s"
            await wait_for(lambda: synced(second), within=20, what="the new leader's sync")
            assert (cluster.get(A) or {})["data"] == {"v": "2"}
            lease = cluster.get(lease_ref("twin")) or {}
            two_msg = _said(two, "acquired: leading as ") or ""
            two_id = two_msg.split("leading as ")[1].split(" ")[0]
            assert lease["spec"]["holderIdentity"] == two_id
            assert lease["spec"]["leaseTransitions"] == 1

            # A graceful stop releases the Lease (the next replica need not wait it out).
            assert two.stop() == 0
            lease = cluster.get(lease_ref("twin")) or {}
            assert lease["spec"]["holderIdentity"] == ""
            assert lease["spec"]["leaseDurationSeconds"] == 1
        finally:
            one.kill()
            if two is not None:
                two.kill()
