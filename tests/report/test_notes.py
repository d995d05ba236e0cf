from __future__ import annotations

from typing import Any

import pytest

from gitkrm.report import notes as notes_module
from gitkrm.report.formats import note_document, parse, render
from gitkrm.report.notes import NoteBook
from tests.report.report_fixtures import AgentRepoMaker
from tests.report.report_helpers import git_out, read_note, stored_entry
from tests.source.source_gitrepo import RemoteRepo


@pytest.fixture
async def book(agent_repo: AgentRepoMaker) -> NoteBook:
    """The note book of agent edge-1 on the test's remote."""
    return NoteBook(await agent_repo(), agent="edge-1")


async def test_sources_share_a_commits_note(book: NoteBook, remote: RemoteRepo) -> None:
    head = remote.head()
    e1 = {**stored_entry("2024-05-01T10:00:00Z"), "revision": head}
    e2 = {**stored_entry("2024-05-01T10:00:01Z"), "revision": head, "health": "InProgress"}
    assert await book.write(head, {"apps": e1})
    assert await book.write(head, {"infra": e2})
    assert not await book.write(head, {"infra": e2})  # the same note again: nothing written
    note = read_note(book.repo.git_dir, "edge-1", head)
    assert note is not None
    assert note["sources"] == {"apps": e1, "infra": e2}
    # One commit per change of the note, none for the repeated write.
    assert (
        git_out(book.repo.git_dir, "rev-list", "--count", "refs/notes/gitkrm/edge-1").strip() == "2"
    )


async def test_a_known_note_is_not_parsed_again(
    book: NoteBook, remote: RemoteRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = remote.head()
    await book.write(head, {"apps": stored_entry("2024-05-01T10:00:00Z", revision=head)})
    calls: list[str] = []
    monkeypatch.setattr(notes_module, "parse", lambda *a, **k: calls.append("parse"))
    await book.write(head, {"infra": stored_entry("2024-05-01T10:00:00Z", revision=head)})
    assert calls == []


async def test_a_foreign_note_is_replaced(book: NoteBook, remote: RemoteRepo) -> None:
    head = remote.head()
    blob = await book.repo.write_blob(b"not: [a gitkrm note")
    await book.repo.set_note(book.ref, head, blob)
    assert await book.read(head) is None
    await book.write(head, {"apps": stored_entry("2024-05-01T10:00:00Z", revision=head)})
    note = await book.read(head)
    assert note is not None
    assert list(note["sources"]) == ["apps"]


async def test_rebase_keeps_both_sides_entries(book: NoteBook, remote: RemoteRepo) -> None:
    repo = book.repo
    head = remote.head()
    other = "1" * 40
    # The remote's history (as fetched): a note on `head` by source a, one on `other`.
    await book.write(head, {"a": stored_entry("2024-05-01T10:00:05Z", v="theirs")})
    await book.write(other, {"a": stored_entry("2024-05-01T10:00:00Z")})
    theirs = await repo.rev(book.ref)
    assert theirs is not None
    await repo.set_ref("refs/notes/test-remote", theirs, message="test")
    # Ours diverged from an older point: our own entries on `head`.
    first = await repo.rev(f"{book.ref}~1")
    assert first is not None
    await repo.update_ref(book.ref, first, old=theirs, message="test")
    book._docs.clear()
    await book.write(
        head,
        {
            "a": stored_entry("2024-05-01T10:00:01Z", v="ours-older"),
            "b": stored_entry("2024-05-01T10:00:02Z"),
        },
    )
    await book.rebase("refs/notes/test-remote")
    tip = await repo.rev(book.ref)
    assert tip is not None
    assert await repo.is_ancestor(theirs, tip)
    note = await book.read(head)
    assert note is not None
    assert note["sources"]["a"]["v"] == "theirs"  # updated later than ours
    assert "b" in note["sources"]
    assert await book.read(other) is not None


async def test_rebase_fast_forwards_and_adopts(book: NoteBook, remote: RemoteRepo) -> None:
    repo = book.repo
    head = remote.head()
    await book.rebase("refs/gitkrm/test/none")  # no remote notes: nothing to do
    assert await repo.rev(book.ref) is None
    blob = await repo.write_blob(
        render(note_document("edge-1", {"a": stored_entry("2024-05-01T10:00:00Z")}))
    )
    await repo.set_note("refs/notes/test-remote", head, blob)
    remote_tip = await repo.rev("refs/notes/test-remote")
    assert remote_tip is not None
    await book.rebase("refs/notes/test-remote")  # no local notes: take theirs
    assert await repo.rev(book.ref) == remote_tip
    await repo.set_note("refs/notes/test-remote", "2" * 40, blob)
    newer = await repo.rev("refs/notes/test-remote")
    assert newer is not None
    assert newer != remote_tip
    await book.rebase("refs/notes/test-remote")  # behind: fast-forward
    assert await repo.rev(book.ref) == newer


async def test_a_note_of_only_the_entries_being_replaced_is_not_parsed(
    book: NoteBook, remote: RemoteRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new process (nothing remembered) rewriting its own source's entry: the old note
    says nothing else worth keeping, and is not read as YAML; one with another source's
    entry is."""
    head = remote.head()
    await book.write(head, {"apps": stored_entry("2024-05-01T10:00:00Z", revision=head)})
    calls: list[str] = []

    def counting(*a: Any, **k: Any) -> Any:
        calls.append("parse")
        return parse(*a, **k)

    monkeypatch.setattr(notes_module, "parse", counting)
    fresh = NoteBook(book.repo, agent="edge-1")
    await fresh.write(head, {"apps": stored_entry("2024-05-01T10:00:05Z", revision=head)})
    assert calls == []
    note = read_note(book.repo.git_dir, "edge-1", head)
    assert note is not None
    assert note["sources"]["apps"]["updated"] == "2024-05-01T10:00:05Z"
    await fresh.write(head, {"infra": stored_entry("2024-05-01T10:00:06Z", revision=head)})
    other = NoteBook(book.repo, agent="edge-1")
    await other.write(head, {"apps": stored_entry("2024-05-01T10:00:07Z", revision=head)})
    assert calls == ["parse"]  # infra's entry is kept: the note was read
    note = read_note(book.repo.git_dir, "edge-1", head)
    assert note is not None
    assert sorted(note["sources"]) == ["apps", "infra"]
