"""A stop signal to `run --once` while it waits on health: the sync under way may finish,
the wait is not waited out. A second signal (or the grace period) cancels what is left,
and the process ends with 1 and says so (it used to wait out a Kustomization's whole
10-minute timeout, whatever the signals)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests.e2e.e2e_support import cli_env, gitkrm_command
from tests.e2e.manifests import deployment, kustomization, namespace
from tests.source.source_gitrepo import RemoteRepo
from tests.support.processes import end
from tests.support.wait import eventually

NEVER_SCHEDULED = deployment(
    "stuck", replicas=1, image="example.test/stuck:1",
    pod_spec={"nodeSelector": {"no-such-node": "true"}},
)  # fmt: skip


def test_a_second_signal_ends_a_wait_on_health(repo: RemoteRepo, state: Path) -> None:
    repo.write("clusters/dev/ns.yaml", namespace("flux-system"))
    repo.write("clusters/dev/app.yaml", kustomization("app", "./app"))
    repo.write("app/stuck.yaml", NEVER_SCHEDULED)
    repo.commit("a Deployment that never becomes available")
    repo.push()
    log = state.parent / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*gitkrm_command(), "run", "--once", "--repo", repo.url, "--path", "clusters/dev",
             "--state", str(state), "--interpret", "flux"],
            cwd=state.parent, env=cli_env(), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        eventually(lambda: "controllers started" in log.read_text(), timeout=60,
                   message="the health wait to begin")  # fmt: skip
        proc.send_signal(signal.SIGTERM)
        eventually(lambda: "finishing the sync under way" in log.read_text(), timeout=10)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    finally:
        end(proc)
    text = log.read_text()
    assert code == 1, text
    assert "stopped: what was left of the sync was cancelled" in text
