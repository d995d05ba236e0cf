"""`gitkrm run --once --wait`: the bundled controllers run until every synced object is
Current (exit 0), one is Failed or the time is up (exit 1); and what the run writes back
into the Git remote (a note per synced commit, the status branch)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from gitkrm.krm import ObjectRef
from tests.e2e.e2e_support import gitkrm, gitsource_status, read_each, reading
from tests.e2e.manifests import configmap, deployment, namespace
from tests.source.source_gitrepo import RemoteRepo

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample-repo"


def _commit_crasher(repo: RemoteRepo, *, deadline: int, message: str) -> None:
    """Commit and push the namespace shop and a Deployment whose pods crash-loop, which
    kstatus calls Failed once `deadline` (progressDeadlineSeconds) has passed."""
    crasher = deployment(
        "crasher", namespace="shop", replicas=1, image="busybox:1.36",
        progressDeadlineSeconds=deadline,
        template_annotations={"gitkrm.io/simulate": "crashloop"},
    )  # fmt: skip
    repo.write("ns.yaml", namespace("shop"))
    repo.write("crasher.yaml", crasher)
    repo.commit(message)
    repo.push()


def _run_wait(
    url: str, state: Path, *, timeout: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """`gitkrm run --once --wait` of the repository at `url` into `state`."""
    return gitkrm(
        "run", "--repo", url, "--state", str(state), "--once", "--wait", "--timeout", timeout,
        cwd=cwd,
    )  # fmt: skip


async def test_sample_repo_reaches_all_current(state: Path) -> None:
    res = _run_wait(str(SAMPLE), state, timeout="60s", cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "object(s) are Current" in res.stdout
    async with reading(state) as store:
        health = (await gitsource_status(store))["health"]
    assert health["status"] == "Current"
    assert health["notCurrent"] == 0
    assert health["objects"] > 10


async def test_a_crash_looping_deployment_fails_the_wait(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    repo.write("settings.yaml", configmap("settings", {"a": "b"}, namespace="shop"))
    _commit_crasher(repo, deadline=2, message="a crash-looping deployment")
    res = _run_wait(repo.url, state, timeout="60s", cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Failed" in res.stdout
    assert "shop/crasher" in res.stdout
    assert "timed out" not in res.stdout


async def test_the_timeout_names_what_is_still_waited_for(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    _commit_crasher(repo, deadline=600, message="never ready, not failed yet")
    res = _run_wait(repo.url, state, timeout="2s", cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "timed out after 2s" in res.stdout
    assert "shop/crasher: InProgress" in res.stdout


async def test_the_timeout_also_bounds_the_waits_between_waves(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    """A wave that never gets healthy: the sync's own wait on it (healthTimeout, 5m by
    default) ends with `--timeout`, and the later wave is not applied."""
    repo.write("ns.yaml", namespace("shop"))
    stuck = deployment(
        "db", namespace="shop", replicas=1, image="postgres:16",
        template_annotations={"gitkrm.io/simulate": "pending"},
    )  # fmt: skip
    repo.write("db.yaml", stuck)  # wave 0
    repo.write("app.yaml", configmap("app", {"v": "1"}, namespace="shop", wave=1))
    repo.commit("wave 0 never becomes Available")
    repo.push()
    started = time.monotonic()
    res = _run_wait(repo.url, state, timeout="3s", cwd=tmp_path)
    took = time.monotonic() - started
    assert res.returncode == 1, res.stdout + res.stderr
    assert took < 60, f"the run took {took:.0f}s, as if healthTimeout (5m) bounded it"
    assert "wave 0 not healthy within" in res.stdout + res.stderr, res.stdout + res.stderr
    assert "shop/db" in res.stdout + res.stderr
    db, app = await read_each(
        state,
        ObjectRef(group="apps", kind="Deployment", name="db", namespace="shop"),
        ObjectRef(group="", kind="ConfigMap", name="app", namespace="shop"),
    )
    assert db is not None
    assert app is None  # wave 1 waited on wave 0


def test_wait_needs_once(state: Path, tmp_path: Path) -> None:
    res = gitkrm("run", "--repo", str(SAMPLE), "--state", str(state), "--wait", cwd=tmp_path)
    assert res.returncode == 2
    assert "--wait needs --once" in res.stderr


def test_run_once_writes_a_note_and_the_status_branch(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    repo.write("ns.yaml", namespace("shop"))
    repo.write("settings.yaml", configmap("settings", {"a": "b"}, namespace="shop"))
    sha = repo.commit("two objects")
    repo.push()
    res = gitkrm(
        "run", "--repo", repo.url, "--state", str(state), "--once", "--agent-name", "e2e",
        cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    bare = repo.url
    note = subprocess.run(
        ["git", "-C", bare, "notes", "--ref", "gitkrm/e2e", "show", sha],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert note.returncode == 0, note.stderr
    assert sha in note.stdout
    assert "Succeeded" in note.stdout
    status = subprocess.run(
        ["git", "-C", bare, "show", "gitkrm/status:status/e2e.yaml"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    assert sha in status.stdout
    shown = gitkrm("status", "--state", str(state), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "settings" in shown.stdout


def test_a_second_sync_of_sample_repo_changes_nothing(state: Path) -> None:
    """Defaults are stored as the API shows them (a ServiceAccount subject has no apiGroup):
    a second sync finds every object unchanged and `gitkrm diff` finds no difference."""
    flags = ("--repo", str(SAMPLE), "--state", str(state))
    first = gitkrm("run", *flags, "--once", cwd=ROOT)
    assert first.returncode == 0, first.stdout + first.stderr
    second = gitkrm("run", *flags, "--once", cwd=ROOT)
    assert second.returncode == 0, second.stdout + second.stderr
    assert " 0 created, 0 configured, 0 pruned," in second.stdout
    diff = gitkrm("diff", *flags, cwd=ROOT)
    assert diff.returncode == 0, diff.stdout + diff.stderr
