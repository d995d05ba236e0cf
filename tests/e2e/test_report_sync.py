"""Scenarios of issue 6 with real bare repositories, the real engine and controllers:
what a sync leaves in the remote (notes, status branch), health followed to Failed, and
a rollback by `git revert` in `gitkrm history`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gitkrm.cli.history_cmd import main as history
from gitkrm.health import Health
from gitkrm.krm import ObjectRef
from tests.report.report_helpers import objects_of, read_note, read_status
from tests.report.report_pipeline import Pipeline
from tests.source.source_gitrepo import RemoteRepo, git

SAMPLE = Path(__file__).resolve().parents[2] / "sample-repo"
WEB = ObjectRef(group="apps", kind="Deployment", name="web", namespace="default")


def web(*, crash: bool, deadline: int = 2) -> str:
    annotations = "      annotations: {gitkrm.io/simulate: crashloop}\n" if crash else ""
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: default}}
spec:
  replicas: 1
  progressDeadlineSeconds: {deadline}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata:
      labels: {{app: web}}
{annotations}    spec:
      containers:
      - {{name: web, image: "nginx:1.27"}}
"""


@pytest.fixture
def repo(tmp_path: Path) -> RemoteRepo:
    return RemoteRepo(tmp_path / "repo")


async def test_sample_repo_sync_is_in_the_remotes_notes_and_status_branch(
    repo: RemoteRepo, tmp_path: Path
) -> None:
    shutil.copytree(SAMPLE, repo.work, dirs_exist_ok=True)
    head = repo.commit("sample repo")
    repo.push()
    async with Pipeline(state=tmp_path / "state", url=repo.url) as p:
        res = await p.sync()
        assert res.ok, res.problems()
        assert await p.reporter.flush(timeout=10)
    # What anyone with the repository sees: `git notes --ref gitkrm/<agent> show <sha>`.
    shown = git("notes", "--ref", "gitkrm/edge-1", "show", head, cwd=repo.bare)
    assert shown.startswith("# gitkrm SyncNote of agent edge-1")
    note = read_note(repo.bare, "edge-1", head)
    assert note is not None
    entry = note["sources"]["default"]
    assert entry["revision"] == head
    assert entry["result"] == "Succeeded"
    assert entry["counts"]["created"] == res.counts["created"] > 10
    assert entry["errors"] == []
    status = read_status(repo.bare, "edge-1")
    assert status is not None
    source = status["sources"]["default"]
    assert source["revision"] == head
    assert source["url"] == repo.url
    assert len(source["objects"]) == res.counts["created"]
    assert {o["kind"] for o in source["objects"]} >= {"Deployment", "Secret", "Queue", "Namespace"}
    not_current = {k for k, h in objects_of(source).items() if h != "Current"}
    assert set(objects_of(entry)) == not_current  # the note lists exactly those


async def test_a_crash_looping_deployment_is_failed_in_note_and_status(
    repo: RemoteRepo, tmp_path: Path
) -> None:
    repo.write("web.yaml", web(crash=True))
    head = repo.commit("crash")
    repo.push()
    async with Pipeline(state=tmp_path / "state", url=repo.url) as p:
        assert (await p.sync()).ok
        await p.until_health(WEB, Health.FAILED)  # once the progress deadline passes
        assert await p.reporter.flush(timeout=10)
    note = read_note(repo.bare, "edge-1", head)
    assert note is not None
    entry = note["sources"]["default"]
    assert entry["result"] == "Succeeded"  # the sync went fine; the rollout did not
    assert entry["health"] == "Failed"
    failed = next(o for o in entry["objects"] if o["kind"] == "Deployment")
    assert (failed["health"], failed["reason"]) == ("Failed", "ProgressDeadlineExceeded")
    status = read_status(repo.bare, "edge-1")
    assert status is not None
    assert status["sources"]["default"]["health"] == "Failed"
    assert objects_of(status["sources"]["default"])["Deployment default/web"] == "Failed"


async def test_a_rollback_by_git_revert_shows_in_history_with_its_health(
    repo: RemoteRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("web.yaml", web(crash=False))
    good = repo.commit("web 1")
    repo.push()
    async with Pipeline(state=tmp_path / "state", url=repo.url) as p:
        await p.sync()
        await p.until_health(WEB, Health.CURRENT)
        repo.write("web.yaml", web(crash=True))
        bad = repo.commit("web 2: crashes")
        repo.push()
        await p.sync()
        await p.until_health(WEB, Health.FAILED)
        git("revert", "--no-edit", "HEAD", cwd=repo.work)
        revert = repo.head()
        repo.push()
        await p.sync()
        await p.until_health(WEB, Health.CURRENT)
        assert await p.reporter.flush(timeout=10)
    git("clone", "-q", str(repo.bare), str(tmp_path / "clone"), cwd=tmp_path)
    assert history(["--repo", str(tmp_path / "clone")]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines[1:] if not line.startswith(" ")]
    assert [(r[0], r[6], r[7]) for r in rows] == [
        (revert[:12], "Succeeded", "Current"),
        (bad[:12], "Succeeded", "Failed"),
        (good[:12], "Succeeded", "Current"),
    ]
    assert lines[1].endswith('Revert "web 2: crashes"')
    assert any("ProgressDeadlineExceeded" in line for line in lines)
    # The same trail from the agent's state directory.
    assert history(["--state", str(tmp_path / "state"), "-o", "json"]) == 0
    out = capsys.readouterr().out
    assert out.index(revert) < out.index(bad) < out.index(good)
