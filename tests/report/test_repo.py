from __future__ import annotations

import pytest

from gitkrm.errors import GitkrmError
from gitkrm.report.repo import (
    NOTES_MESSAGE,
    FileCommit,
    NoteCommit,
    blob_id,
)
from gitkrm.report.statusfile import STATUS_REF
from gitkrm.source.snapshot import git_blob_id
from tests.report.report_fixtures import AgentRepoMaker, SourceMaker
from tests.report.report_helpers import git_out
from tests.source.source_gitrepo import RemoteRepo

NOTES = "refs/notes/gitkrm/edge-1"


async def test_a_note_and_the_status_file_are_one_fast_import(
    agent_repo: AgentRepoMaker, remote: RemoteRepo
) -> None:
    repo = await agent_repo()
    head = remote.head()
    done = await repo.commit(
        [
            NoteCommit(NOTES, head, content=b"note: 1\n"),
            FileCommit(STATUS_REF, "status/edge-1.yaml", "status of edge-1", content=b"s: 1\n"),
        ],
        parents={NOTES: None, STATUS_REF: None},
    )
    assert dict(repo.runner.calls) == {"cat-file": 1, "fast-import": 1}
    assert [d.blob for d in done] == [git_blob_id(b"note: 1\n"), git_blob_id(b"s: 1\n")]
    assert [d.commit for d in done] == [await repo.rev(NOTES), await repo.rev(STATUS_REF)]
    # As `git notes add` and `git commit-tree -m` would have written them.
    git_dir = repo.git_dir
    assert git_out(git_dir, "notes", "--ref", NOTES, "show", head) == "note: 1\n"
    assert git_out(git_dir, "notes", "--ref", NOTES, "list", head).strip() == done[0].blob
    assert git_out(git_dir, "cat-file", "-p", NOTES).endswith(f"\n\n{NOTES_MESSAGE}\n")
    status_commit = git_out(git_dir, "cat-file", "-p", STATUS_REF)
    assert "\nauthor gitkrm edge-1 <edge-1@gitkrm.invalid> " in status_commit
    assert "\ncommitter gitkrm edge-1 <edge-1@gitkrm.invalid> " in status_commit
    assert status_commit.endswith("\n\nstatus of edge-1\n")
    assert await repo.message_of(STATUS_REF) == "status of edge-1"
    assert git_out(git_dir, "show", f"{STATUS_REF}:status/edge-1.yaml") == "s: 1\n"
    repo.close()


async def test_writes_to_one_ref_are_chained_and_known_as_ancestors(
    agent_repo: AgentRepoMaker, make_source: SourceMaker, remote: RemoteRepo
) -> None:
    repo = await agent_repo()
    first = remote.head()
    second = remote.publish("second", {"b.yaml": "b: 1\n"})
    await make_source(remote.url)  # the cache has both commits now
    [one] = await repo.commit([NoteCommit(NOTES, first, content=b"a\n")], parents={NOTES: None})
    done = await repo.commit(
        [NoteCommit(NOTES, first, content=b"a2\n"), NoteCommit(NOTES, second, content=b"b\n")],
        parents={NOTES: one.commit},
    )
    tip = await repo.rev(NOTES)
    assert tip == done[1].commit
    assert git_out(repo.git_dir, "rev-list", "--count", NOTES).strip() == "3"  # one per note
    assert git_out(repo.git_dir, "notes", "--ref", NOTES, "show", first) == "a2\n"
    assert git_out(repo.git_dir, "notes", "--ref", NOTES, "show", second) == "b\n"
    assert one.commit is not None
    assert tip is not None
    assert await repo.is_ancestor(one.commit, tip)
    assert repo.runner.calls["merge-base"] == 0  # our own chain: no git asked
    assert not await repo.is_ancestor(tip, one.commit)
    assert repo.runner.calls["merge-base"] == 0  # ... either way
    foreign = git_out(repo.git_dir, "commit-tree", "-p", tip, "-m", "x", f"{tip}^{{tree}}")
    assert await repo.is_ancestor(tip, foreign.strip())  # not ours: git answers, once
    assert await repo.is_ancestor(tip, foreign.strip())
    assert repo.runner.calls["merge-base"] == 1
    repo.close()


async def test_a_ref_moves_only_forward_from_where_it_is(
    agent_repo: AgentRepoMaker, remote: RemoteRepo
) -> None:
    repo = await agent_repo()
    write = FileCommit(STATUS_REF, "status/edge-1.yaml", "m", content=b"1\n")
    [first] = await repo.commit([write], parents={STATUS_REF: None})
    other = FileCommit(STATUS_REF, "status/edge-1.yaml", "m", content=b"2\n")
    with pytest.raises(GitkrmError, match="Not updating"):
        await repo.commit([other], parents={STATUS_REF: None})  # a new root: not forward
    assert await repo.rev(STATUS_REF) == first.commit
    assert not list(repo.git_dir.glob("fast_import_crash_*"))
    repo.close()


async def test_a_note_on_what_is_not_a_commit_here_is_added_by_git_notes(
    agent_repo: AgentRepoMaker, remote: RemoteRepo
) -> None:
    """fast-import notes commits only; a note on anything else (a commit the cache does
    not have) is written as `git notes add` writes it."""
    repo = await agent_repo()
    absent = "1" * 40
    head = remote.head()
    done = await repo.commit(
        [NoteCommit(NOTES, head, content=b"here\n"), NoteCommit(NOTES, absent, content=b"gone\n")],
        parents={NOTES: None},
    )
    assert done[1].commit is None
    assert repo.runner.calls["notes"] == 1
    assert await repo.note_blob(NOTES, absent) == git_blob_id(b"gone\n")
    assert await repo.note_blob(NOTES, head) == git_blob_id(b"here\n")
    repo.close()


async def test_a_note_is_found_at_any_fan_out(
    agent_repo: AgentRepoMaker, remote: RemoteRepo
) -> None:
    repo = await agent_repo()
    head = remote.head()
    fanned = f"{head[:2]}/{head[2:4]}/{head[4:]}"
    await repo.commit(
        [FileCommit("refs/notes/fanned", fanned, "notes", content=b"deep\n")],
        parents={"refs/notes/fanned": None},
    )
    listed = git_out(repo.git_dir, "notes", "--ref=refs/notes/fanned", "list", head).strip()
    assert listed == git_blob_id(b"deep\n")
    assert await repo.note_blob("refs/notes/fanned", head) == listed
    assert await repo.note_blob("refs/notes/fanned", "2" * 40) is None
    assert await repo.note_blob("refs/notes/none", head) is None
    repo.close()


def test_blob_ids_are_gits() -> None:
    assert blob_id(b"x\n") == git_blob_id(b"x\n")
    assert len(blob_id(b"x\n", like="a" * 64)) == 64  # a SHA-256 repository's
