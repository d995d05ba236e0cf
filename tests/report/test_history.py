from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.errors import GitkrmError, NotFound
from gitkrm.report.history import (
    Filter,
    fetch_notes,
    git_dir_of,
    repo_history,
    state_history,
    url_history,
)
from tests.report.report_helpers import git_out
from tests.source.source_gitrepo import RemoteRepo, git
from tests.support.net import free_port


async def test_a_clone_fetches_the_notes_and_shows_each_commits_syncs(
    history: list[str], remote: RemoteRepo, tmp_path: Path
) -> None:
    first, second, third = history
    git("clone", "-q", str(remote.bare), str(tmp_path / "clone"), cwd=tmp_path)
    git_dir = git_dir_of(tmp_path / "clone")
    before = repo_history(git_dir)
    assert all(not e.records for e in before)  # a clone has no notes of its own
    assert fetch_notes(git_dir) == "origin"
    entries = repo_history(git_dir)
    assert [e.commit.sha for e in entries] == [third, second, first]
    assert [e.commit.subject for e in entries] == ["third", "second", "first"]
    top = entries[0]
    assert [(r.agent, r.source, r.result, r.health) for r in top.records] == [
        ("edge-1", "default", "Failed", "Failed"),
        ("edge-2", "apps", "Succeeded", "Current"),
    ]
    assert top.records[0].entry["errors"] == ["boom"]
    assert entries[1].records == ()
    assert [(r.agent, r.health) for r in entries[2].records] == [("edge-1", "Current")]
    assert entries[2].records[0].time == "2024-05-01T10:00:00Z"
    data = top.to_dict()
    assert data["commit"] == third
    assert data["syncs"][0]["agent"] == "edge-1"
    assert data["syncs"][0]["source"] == "default"
    only = repo_history(git_dir, limit=1, flt=Filter(agent="edge-2"))
    assert [(e.commit.sha, [r.agent for r in e.records]) for e in only] == [(third, ["edge-2"])]
    none = repo_history(git_dir, flt=Filter(source="nope"))
    assert all(not e.records for e in none)


async def test_a_remote_url_is_read_through_a_temporary_repository(
    history: list[str], remote: RemoteRepo
) -> None:
    first, _, third = history
    entries = url_history(f"file://{remote.bare}", limit=2)
    assert entries[0].commit.sha == third
    assert len(entries) == 2
    assert {r.agent for r in entries[0].records} == {"edge-1", "edge-2"}
    on_main = url_history(f"file://{remote.bare}", branch="main", limit=5)
    assert on_main[-1].commit.sha == first


async def test_an_agents_state_lists_its_syncs_newest_first(
    history: list[str], remote: RemoteRepo, tmp_path: Path
) -> None:
    first, _, third = history
    entries = state_history(tmp_path / "state")
    assert [e.commit.sha for e in entries] == [third, first]
    assert entries[0].commit.subject == "third"
    assert [r.agent for r in entries[0].records] == ["edge-1"]  # edge-2 has its own state
    assert [e.commit.sha for e in state_history(tmp_path / "state", limit=1)] == [third]


def test_what_is_not_there_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no Git caches"):
        state_history(tmp_path)
    with pytest.raises(NotFound, match="not a Git repository"):
        git_dir_of(tmp_path)
    with pytest.raises(NotFound, match="no such repository"):
        git_dir_of(tmp_path / "nope")


def test_a_bad_revision_and_a_bare_repo_without_remote(remote: RemoteRepo) -> None:
    with pytest.raises(NotFound, match="is not a commit"):
        repo_history(remote.bare, rev="refs/heads/nope")
    assert fetch_notes(remote.bare) is None


def test_foreign_notes_under_the_prefix_are_skipped(remote: RemoteRepo) -> None:
    git("notes", "--ref=gitkrm/someone", "add", "-m", "just text", "HEAD", cwd=remote.work)
    git("push", "-q", "origin", "refs/notes/gitkrm/someone", cwd=remote.work)
    entries = repo_history(remote.bare)
    assert entries[0].records == ()
    assert "just text" in git_out(remote.bare, "notes", "--ref=gitkrm/someone", "show", "HEAD")


def test_credentials_in_a_failing_url_are_not_shown() -> None:
    with pytest.raises(GitkrmError) as e:
        url_history(f"https://user:hunter2-secret@127.0.0.1:{free_port()}/repo.git")
    assert "hunter2-secret" not in e.value.message
    assert "127.0.0.1" in e.value.message
