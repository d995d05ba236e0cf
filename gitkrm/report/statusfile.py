"""`status/<agent>.yaml` on the branch `gitkrm/status`, built without a work tree.

The branch is shared by every agent writing to the repository: each one changes only its
own file. Our view of it is the local ref `refs/gitkrm/report/status` in the cache; a
rebase onto the remote's tip rebuilds our latest commit on top of it, taking their tree
and putting our file in.
"""

from __future__ import annotations

from .formats import status_path
from .repo import FileCommit, ReportRepo, blob_id

STATUS_REF = "refs/gitkrm/report/status"
REPLAY_REF = "refs/gitkrm/report/replay"


class StatusFile:
    """One agent's status file on the local status ref. Callers serialize writes."""

    def __init__(self, repo: ReportRepo, *, agent: str) -> None:
        self.repo = repo
        self.agent = agent
        self.path = status_path(agent)
        self.ref = STATUS_REF

    async def prepare(self, data: bytes, *, message: str) -> tuple[FileCommit, str | None] | None:
        """The commit of `data` as our file on top of the local tip (and that tip); None
        when the file already says exactly that. Written with `ReportRepo.commit`."""
        tip = await self.repo.rev(self.ref)
        if tip is not None:
            old = await self.repo.blob_at(tip, self.path)
            if old is not None and blob_id(data, like=old) == old:
                return None
        return FileCommit(self.ref, self.path, message, content=data), tip

    async def write(self, data: bytes, *, message: str) -> bool:
        """Commit `data` as our file on top of the local tip; False when it is unchanged."""
        planned = await self.prepare(data, message=message)
        if planned is None:
            return False
        write, tip = planned
        await self.repo.commit([write], parents={self.ref: tip})
        return True

    async def read(self, *, ref: str | None = None) -> bytes | None:
        tip = await self.repo.rev(ref or self.ref)
        if tip is None:
            return None
        blob = await self.repo.blob_at(tip, self.path)
        return None if blob is None else await self.repo.read_blob(blob)

    async def rebase(self, remote_ref: str) -> None:
        """Make the local tip a descendant of `remote_ref`: our last commit replayed on it
        (their files as they are, ours as we last wrote it)."""
        remote = await self.repo.rev(remote_ref)
        if remote is None:
            return
        tip = await self.repo.rev(self.ref)
        if tip is not None and await self.repo.is_ancestor(remote, tip):
            return
        blob = await self.repo.blob_at(tip, self.path) if tip is not None else None
        if blob is None or await self.repo.blob_at(remote, self.path) == blob:
            await self.repo.update_ref(self.ref, remote, old=tip, message="gitkrm: status")
            return
        assert tip is not None
        message = await self.repo.message_of(tip)
        # Our last commit replayed on theirs, built on a scratch ref; then the local ref
        # moves to it as long as it is still at our tip.
        replay = FileCommit(REPLAY_REF, self.path, message, blob=blob)
        [done] = await self.repo.commit([replay], parents={REPLAY_REF: remote}, force=True)
        assert done.commit is not None
        await self.repo.update_refs(
            {self.ref: (done.commit, tip), REPLAY_REF: (None, done.commit)},
            message="gitkrm: status rebase",
        )
