from __future__ import annotations

from gitkrm.report.statusfile import STATUS_REF, StatusFile
from tests.report.report_fixtures import AgentRepoMaker, RepoMaker
from tests.report.report_helpers import git_out
from tests.source.source_gitrepo import RemoteRepo


async def test_writes_commit_without_touching_the_tracked_ref(
    agent_repo: AgentRepoMaker, remote: RemoteRepo
) -> None:
    status = StatusFile(await agent_repo(), agent="edge-1")
    repo = status.repo
    refs_before = {
        r: await repo.rev(r) for r in ("refs/gitkrm/tracked", "refs/gitkrm/snapshot", "HEAD")
    }
    assert await status.write(b"one\n", message="m1")
    assert not await status.write(b"one\n", message="m2")  # unchanged: no commit
    assert await status.write(b"two\n", message="m3")
    assert await status.read() == b"two\n"
    log = git_out(repo.git_dir, "log", "--format=%s%x09%an <%ae>", STATUS_REF).splitlines()
    assert log == [
        "m3\tgitkrm edge-1 <edge-1@gitkrm.invalid>",
        "m1\tgitkrm edge-1 <edge-1@gitkrm.invalid>",
    ]
    assert git_out(repo.git_dir, "ls-tree", "-r", "--name-only", STATUS_REF).split() == [
        "status/edge-1.yaml"
    ]
    for ref, oid in refs_before.items():
        assert await repo.rev(ref) == oid
    assert not (repo.git_dir / "index").exists()  # no index, no work tree


async def test_rebase_replays_our_file_onto_theirs(
    agent_repo: AgentRepoMaker, make_repo: RepoMaker, remote: RemoteRepo
) -> None:
    ours = StatusFile(await agent_repo(), agent="edge-1")
    repo = ours.repo
    theirs = StatusFile(make_repo(repo.target, agent="edge-2"), agent="edge-2")
    theirs.ref = "refs/gitkrm/test/remote-status"
    await theirs.write(b"theirs v1\n", message="edge-2 v1")
    base = await repo.rev(theirs.ref)
    assert base is not None
    await ours.rebase(theirs.ref)  # nothing of ours yet: take theirs
    assert await repo.rev(ours.ref) == base
    await ours.write(b"ours\n", message="edge-1 status")
    await theirs.write(b"theirs v2\n", message="edge-2 v2")
    await ours.rebase(theirs.ref)
    tip = await repo.rev(ours.ref)
    assert tip is not None
    assert await repo.is_ancestor((await repo.rev(theirs.ref)) or "", tip)
    files = git_out(repo.git_dir, "ls-tree", "-r", "--name-only", tip).split()
    assert files == ["status/edge-1.yaml", "status/edge-2.yaml"]
    assert await ours.read() == b"ours\n"
    assert await theirs.read(ref=ours.ref) == b"theirs v2\n"
    assert git_out(repo.git_dir, "log", "-1", "--format=%s", tip).strip() == "edge-1 status"
    await ours.rebase(theirs.ref)  # already on top: nothing changes
    assert await repo.rev(ours.ref) == tip
