"""Hooks and health-gated waves on the cluster target: `run --once --kubeconfig` against a
gitkrm API server on loopback (TLS-less, with its bundled controllers, playing a cluster):
the PreSync Job runs to completion before the Sync phase, its delete policies hold, and
wave 1 is applied once wave 0's Deployment is Available, through HTTP only."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitkrm.cli.main import main
from gitkrm.controllers import ControllerOptions
from gitkrm.krm import GVK
from gitkrm.server import ServeOptions, ServerThread
from gitkrm.store.kube import KubeStore, load_kubeconfig
from tests.sync.sync_helpers import Remote, configmap, deployment, namespace
from tests.sync.test_hooks import job

pytestmark = pytest.mark.e2e

FAST = ControllerOptions(pod_start_delay=0.1, pod_run_duration=0.2, lease_interval=1.0)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig of the server."""
    options = ServeOptions(port=0, state_dir=tmp_path / "server")
    with ServerThread(options=options, controllers=FAST) as s:
        assert s.bound is not None
        assert s.bound.kubeconfig is not None
        yield Path(s.bound.kubeconfig)


def _list(kubeconfig: Path, gvk: GVK) -> dict[str, dict[str, Any]]:
    async def go() -> dict[str, dict[str, Any]]:
        store = KubeStore(load_kubeconfig(kubeconfig))
        try:
            listed = await store.list(gvk, namespace="apps")
        finally:
            await store.close()
        return {o["metadata"]["name"]: o for o in listed["items"]}

    return asyncio.run(go())


def test_hooks_and_waves_on_the_cluster_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: Path
) -> None:
    wave = "  annotations: {argocd.argoproj.io/sync-wave: '%d'}\n"
    remote = Remote(tmp_path / "repo")
    remote.write("ns.yaml", namespace("apps"))
    remote.write("pre.yaml", job("migrate", "PreSync", generate=True))
    remote.write("gone.yaml", job("check", "PreSync", policy="HookSucceeded"))
    remote.write(
        "db.yaml",
        deployment("db", replicas=2, annotations="    argocd.argoproj.io/sync-wave: '0'\n"),
    )
    remote.write("app.yaml", configmap("app", extra=wave % 1))
    remote.write(
        "post.yaml", configmap("done", extra="  annotations: {argocd.argoproj.io/hook: PostSync}\n")
    )
    remote.commit()
    flags = ["--repo", remote.url, "--state", str(tmp_path / "st"), "--kubeconfig", str(cluster)]
    code = main(["run", "--once", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("default: synced revision "), out

    jobs = _list(cluster, GVK(group="batch", version="v1", kind="Job"))
    migrate = [n for n in jobs if n.startswith("migrate-")]
    assert len(migrate) == 1  # generateName: a run of its own
    assert jobs[migrate[0]]["status"].get("succeeded") == 1  # completed before the Sync phase
    assert "check" not in jobs  # HookSucceeded: deleted once it succeeded
    deployments = _list(cluster, GVK(group="apps", version="v1", kind="Deployment"))
    conditions = {c["type"]: c["status"] for c in deployments["db"]["status"]["conditions"]}
    assert conditions.get("Available") == "True"
    configmaps = _list(cluster, GVK(group="", version="v1", kind="ConfigMap"))
    assert {"app", "done"} <= configmaps.keys()  # wave 1 and the PostSync hook
    # The hooks are not in the inventory: a second run prunes nothing and runs no hook.
    code = main(["run", "--once", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "0 pruned" in out or "nothing changed" in out, out
    jobs = _list(cluster, GVK(group="batch", version="v1", kind="Job"))
    assert [n for n in jobs if n.startswith("migrate-")] == migrate
