"""Scenarios of issue 6: two agents reporting into one repository, and a remote that
refuses pushes for a while."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.health import Health
from gitkrm.krm import ObjectRef
from tests.report.report_helpers import read_note, read_status
from tests.report.report_pipeline import Pipeline
from tests.source.source_gitrepo import RemoteRepo, git

SETTINGS = ObjectRef(group="", kind="ConfigMap", name="settings", namespace="default")
CM = (
    "apiVersion: v1\nkind: ConfigMap\n"
    "metadata: {{name: {name}, namespace: default}}\ndata: {{v: '{v}'}}\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> RemoteRepo:
    r = RemoteRepo(tmp_path / "repo")
    r.write("cm.yaml", CM.format(name="settings", v="1"))
    r.commit("one")
    r.push()
    return r


async def test_two_agents_both_report_and_keep_each_others_status(
    repo: RemoteRepo, tmp_path: Path
) -> None:
    first = repo.head()
    async with (
        Pipeline(state=tmp_path / "a", url=repo.url, agent="edge-a") as a,
        Pipeline(state=tmp_path / "b", url=repo.url, agent="edge-b") as b,
    ):
        await a.sync()
        await b.sync()
        assert await a.reporter.flush(timeout=10)
        assert await b.reporter.flush(timeout=10)  # stale after a's push: rebased
        repo.write("cm.yaml", CM.format(name="settings", v="2"))
        second = repo.commit("two")
        repo.push()
        await b.sync()
        await a.sync()
        assert await b.reporter.flush(timeout=10)
        assert await a.reporter.flush(timeout=10)
    files = git("ls-tree", "-r", "--name-only", "gitkrm/status", cwd=repo.bare).split()
    assert files == ["status/edge-a.yaml", "status/edge-b.yaml"]
    for agent in ("edge-a", "edge-b"):
        status = read_status(repo.bare, agent)
        assert status is not None
        assert status["agent"] == agent
        assert status["sources"]["default"]["revision"] == second
        for commit in (first, second):
            note = read_note(repo.bare, agent, commit)
            assert note is not None
            assert note["sources"]["default"]["result"] == "Succeeded"
    refs = git("for-each-ref", "--format=%(refname)", "refs/notes/", cwd=repo.bare).split()
    assert refs == ["refs/notes/gitkrm/edge-a", "refs/notes/gitkrm/edge-b"]
    # The branch's history is linear: every push went on top of the other agent's.
    merges = git("rev-list", "--merges", "--count", "gitkrm/status", cwd=repo.bare)
    assert merges == "0"


async def test_a_remote_refusing_pushes_gets_the_notes_once_it_accepts_again(
    repo: RemoteRepo, tmp_path: Path
) -> None:
    hook = repo.bare / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\n"
        "while read old new ref; do\n"
        '  case "$ref" in refs/notes/*|refs/heads/gitkrm/*) echo "maintenance" >&2; exit 1;; esac\n'
        "done\n"
    )
    hook.chmod(0o755)
    head = repo.head()
    async with Pipeline(state=tmp_path / "state", url=repo.url) as p:
        res = await p.sync()  # syncing is not held up by the refusing remote
        assert res.ok
        await p.until_health(SETTINGS, Health.CURRENT)
        await p.until_push_state(lambda s: s.failures >= 2)  # retried with backoff
        state = p.reporter.push_state("default")
        assert state is not None
        assert state.pending
        assert state.last_error is not None
        assert "maintenance" in state.last_error or "declined" in state.last_error
        assert state.to_status()["lastPushError"] == state.last_error
        assert read_note(repo.bare, "edge-1", head) is None
        assert read_note(p.source.cache_dir, "edge-1", head) is not None  # written locally
        hook.unlink()
        state = await p.until_pushed()
        assert state.failures == 0
    note = read_note(repo.bare, "edge-1", head)
    assert note is not None
    assert note["sources"]["default"]["result"] == "Succeeded"
    assert read_status(repo.bare, "edge-1") is not None
