from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from gitkrm.errors import Conflict, Forbidden, GitkrmError
from gitkrm.report.branch import MAX_REBASES, Backoff, Publisher, PushState
from gitkrm.report.notes import NoteBook
from gitkrm.report.repo import Rejection
from gitkrm.report.statusfile import StatusFile
from tests.report.report_fixtures import AgentRepoMaker
from tests.report.report_helpers import git_out, stored_entry
from tests.source.source_gitrepo import RemoteRepo


async def _publisher(agent_repo: AgentRepoMaker, agent: str) -> Publisher:
    """The agent's publisher, its source cached in a state directory of its own."""
    repo = await agent_repo(agent, state=f"state-{agent}")
    return Publisher(
        repo,
        notes=NoteBook(repo, agent=agent),
        status=StatusFile(repo, agent=agent),
        lock=asyncio.Lock(),
    )


@pytest.fixture
async def pub(agent_repo: AgentRepoMaker) -> Publisher:
    """Agent edge-1's publisher."""
    return await _publisher(agent_repo, "edge-1")


def _note(agent: str, updated: str = "2024-05-01T10:00:00Z") -> dict[str, object]:
    return stored_entry(updated, time=updated, by=agent)


async def test_publish_pushes_notes_and_status(pub: Publisher, remote: RemoteRepo) -> None:
    head = remote.head()
    await pub.notes.write(head, {"default": _note("edge-1")})
    await pub.status.write(b"edge-1 status\n", message="status")
    assert len(await pub.unpushed()) == 2
    await pub.publish()
    assert await pub.unpushed() == []
    assert git_out(
        remote.bare, "rev-parse", "refs/notes/gitkrm/edge-1"
    ).strip() == await pub.repo.rev(pub.notes.ref)
    assert git_out(remote.bare, "show", "gitkrm/status:status/edge-1.yaml") == "edge-1 status\n"
    pushes = pub.repo.runner.calls["push"]
    await pub.publish()  # nothing new: no push at all
    assert pub.repo.runner.calls["push"] == pushes


async def test_another_agents_push_is_rebased_onto(
    agent_repo: AgentRepoMaker, remote: RemoteRepo
) -> None:
    one = await _publisher(agent_repo, "edge-1")
    two = await _publisher(agent_repo, "edge-2")
    await one.publish()  # learn the (empty) remote
    await two.status.write(b"two\n", message="two")
    await two.publish()
    await one.status.write(b"one\n", message="one")
    await one.notes.write(remote.head(), {"default": _note("edge-1")})
    await one.publish()  # stale: fetched, rebased, pushed again
    assert one.repo.runner.calls["push"] == 2
    files = git_out(remote.bare, "ls-tree", "-r", "--name-only", "gitkrm/status").split()
    assert files == ["status/edge-1.yaml", "status/edge-2.yaml"]
    assert git_out(remote.bare, "show", "gitkrm/status:status/edge-2.yaml") == "two\n"
    # edge-2 writes again: its view is stale now, and it keeps edge-1's file.
    await two.status.write(b"two again\n", message="two again")
    await two.publish()
    assert git_out(remote.bare, "show", "gitkrm/status:status/edge-1.yaml") == "one\n"
    assert git_out(remote.bare, "show", "gitkrm/status:status/edge-2.yaml") == "two again\n"
    log = git_out(remote.bare, "log", "--format=%s", "gitkrm/status").split("\n")
    assert log[:3] == ["two again", "one", "two"]


async def test_a_fresh_agent_state_merges_the_remotes_notes(
    agent_repo: AgentRepoMaker, remote: RemoteRepo
) -> None:
    """An agent restarted with an empty state dir must not lose the notes it pushed before."""
    before = await _publisher(agent_repo, "edge-1")
    head = remote.head()
    await before.notes.write(head, {"apps": _note("edge-1")})
    await before.notes.write("1" * 40, {"apps": _note("edge-1")})
    await before.publish()
    after = await _publisher(agent_repo, "edge-1")  # same agent, new cache
    await after.notes.write(head, {"infra": _note("edge-1", "2024-05-01T10:00:09Z")})
    await after.publish()
    note = git_out(remote.bare, "notes", "--ref=gitkrm/edge-1", "show", head)
    assert "apps:" in note
    assert "infra:" in note
    assert git_out(remote.bare, "notes", "--ref=gitkrm/edge-1", "list").count("\n") == 2


async def test_a_refusing_remote_is_forbidden(pub: Publisher, remote: RemoteRepo) -> None:
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no reports here' >&2\nexit 1\n")
    hook.chmod(0o755)
    await pub.status.write(b"x\n", message="x")
    with pytest.raises(Forbidden, match="pre-receive hook declined"):
        await pub.publish()
    hook.unlink()
    await pub.publish()
    assert git_out(remote.bare, "show", "gitkrm/status:status/edge-1.yaml") == "x\n"


async def test_an_unreachable_remote_is_an_error(pub: Publisher, tmp_path: Path) -> None:
    await pub.status.write(b"x\n", message="x")
    pub.repo.url = str(tmp_path / "gone.git")
    with pytest.raises(GitkrmError, match=r"gone\.git"):
        await pub.publish()


async def test_a_remote_that_keeps_moving_is_a_conflict(
    pub: Publisher, monkeypatch: pytest.MonkeyPatch
) -> None:
    await pub.status.write(b"x\n", message="x")

    async def always_stale(refspecs: list[str]) -> list[Rejection]:
        return [Rejection(s.rpartition(":")[2], "[rejected] (fetch first)", True) for s in refspecs]

    monkeypatch.setattr(pub.repo, "push", always_stale)
    with pytest.raises(Conflict, match=f"moved {MAX_REBASES} times"):
        await pub.publish()


def test_backoff_grows_to_its_maximum_with_bounded_jitter() -> None:
    b = Backoff(initial=1.0, maximum=30.0, jitter=0.0)
    assert [b.delay(n) for n in (1, 2, 3, 4, 5, 6, 10)] == [1, 2, 4, 8, 16, 30, 30]
    j = Backoff(initial=10.0, maximum=10.0, jitter=0.2)
    assert all(8.0 <= j.delay(3) <= 12.0 for _ in range(50))


def test_push_state_for_the_gitsource_status() -> None:
    t = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC)
    s = PushState(
        url="https://h/r",
        pending=True,
        last_attempt=t,
        last_error="denied",
        failures=2,
        next_attempt=t,
    )
    assert s.to_status() == {
        "url": "https://h/r",
        "pending": True,
        "failures": 2,
        "lastPushAttempt": "2024-05-01T10:00:00Z",
        "nextPushAttempt": "2024-05-01T10:00:00Z",
        "lastPushError": "denied",
    }
    assert not s.ok
    assert PushState(url="u").ok
