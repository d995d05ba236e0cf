"""Publishing the reports: fetch the remote's refs, rebase ours onto them, push, repeat.

Two refs go to the remote: the agent's notes (`refs/notes/gitkrm/<agent>`, written only
by this agent, so normally a fast-forward) and `refs/heads/gitkrm/status` (shared by all
agents: another agent's push makes ours stale; we fetch, rebase and push again). Pushes
never force, so nobody's file or note is ever lost. A remote that refuses (no
credentials, down, a hook saying no) is an error for the caller, who retries with
`Backoff` and shows it in `PushState`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
from dataclasses import dataclass
from typing import Any

from gitkrm.errors import Conflict, Forbidden

from .formats import STATUS_BRANCH, rfc3339
from .notes import NoteBook
from .repo import ReportRepo
from .statusfile import StatusFile

REMOTE_STATUS = "refs/heads/" + STATUS_BRANCH
TRACKING_PREFIX = "refs/gitkrm/report/remote/"
MAX_REBASES = 5


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential delays with jitter: `initial`, doubling up to `maximum` seconds."""

    initial: float = 1.0
    maximum: float = 300.0
    factor: float = 2.0
    jitter: float = 0.2

    def delay(self, failures: int) -> float:
        """The wait before the next attempt after `failures` failures in a row (>= 1)."""
        base = min(self.maximum, self.initial * self.factor ** max(0, failures - 1))
        return base * (1 + random.uniform(-self.jitter, self.jitter))


@dataclass(frozen=True, slots=True)
class PushState:
    """How a remote is taking our reports, for the GitSource status and logs."""

    url: str
    pending: bool = False
    last_attempt: dt.datetime | None = None
    last_success: dt.datetime | None = None
    last_error: str | None = None
    failures: int = 0
    next_attempt: dt.datetime | None = None

    @property
    def ok(self) -> bool:
        return self.last_error is None

    def to_status(self) -> dict[str, Any]:
        """The `status.report` of a GitSource (camelCase, times in RFC 3339)."""
        out: dict[str, Any] = {"url": self.url, "pending": self.pending, "failures": self.failures}
        for key, value in (
            ("lastPushAttempt", self.last_attempt),
            ("lastPushTime", self.last_success),
            ("nextPushAttempt", self.next_attempt),
        ):
            if value is not None:
                out[key] = rfc3339(value)
        if self.last_error is not None:
            out["lastPushError"] = self.last_error
        return out


class Publisher:
    """Pushes one agent's notes and status ref of one cache repository to its remote."""

    def __init__(
        self, repo: ReportRepo, *, notes: NoteBook, status: StatusFile, lock: asyncio.Lock
    ) -> None:
        self.repo = repo
        self.notes = notes
        self.status = status
        self.lock = lock
        agent = notes.agent
        # (local ref, remote ref, our copy of the remote's)
        self.refs = (
            (notes.ref, notes.ref, f"{TRACKING_PREFIX}notes/{agent}"),
            (status.ref, REMOTE_STATUS, f"{TRACKING_PREFIX}status"),
        )
        self._fetched = False

    @property
    def fetched(self) -> bool:
        """Whether our copies of the remote's refs were fetched (they are kept up to date
        from then on by the pushes, and fetched again when a push finds them stale)."""
        return self._fetched

    async def fetch(self) -> None:
        """Bring our copies of the remote's refs up to date (only those that moved)."""
        found = await self.repo.ls_remote([remote for _, remote, _ in self.refs])
        specs: list[str] = []
        for _, remote, tracking in self.refs:
            oid = found.get(remote)
            if oid is None:
                if await self.repo.rev(tracking) is not None:
                    await self.repo.delete_ref(tracking)
            elif await self.repo.rev(tracking) != oid:
                specs.append(f"+{remote}:{tracking}")
        if specs:
            await self.repo.fetch(specs)
        self._fetched = True

    async def unpushed(self) -> list[tuple[str, str, str]]:
        """(local oid, remote ref, tracking ref) of the refs ahead of the remote's."""
        out: list[tuple[str, str, str]] = []
        for local, remote, tracking in self.refs:
            oid = await self.repo.rev(local)
            if oid is not None and oid != await self.repo.rev(tracking):
                out.append((oid, remote, tracking))
        return out

    async def prepare(self) -> None:
        """Fetch the remote's refs and rebase ours onto them, as a push would first: the
        reports written next build on the remote's, and the push needs no fetch."""
        await self.fetch()
        async with self.lock:
            await self.notes.rebase(self.refs[0][2])
            await self.status.rebase(self.refs[1][2])

    async def publish(self) -> None:
        """Push until the remote has our refs; rebase and retry when another writer moved
        them. `Forbidden` when the remote refuses, `Conflict` when it keeps moving; any
        other `gitkrm.errors` class when it can't be reached or asks for credentials."""
        need_fetch = not self._fetched
        for _ in range(MAX_REBASES):
            if need_fetch:
                await self.fetch()
            async with self.lock:
                await self.notes.rebase(self.refs[0][2])
                await self.status.rebase(self.refs[1][2])
                todo = await self.unpushed()
            if not todo:
                return
            rejected = await self.repo.push([f"{oid}:{remote}" for oid, remote, _ in todo])
            refused = {r.ref: r for r in rejected}
            await self.repo.set_refs(
                {tracking: oid for oid, remote, tracking in todo if remote not in refused},
                message="gitkrm: pushed",
            )
            hard = [r for r in rejected if not r.stale]
            if hard:
                what = "; ".join(f"{r.ref}: {r.reason}" for r in hard)
                raise Forbidden(f"push reports to {self.repo.url}: refused ({what})")
            if not rejected:
                return
            need_fetch = True
        raise Conflict(
            f"push reports to {self.repo.url}: the remote's refs moved {MAX_REBASES} times "
            "while rebasing onto them"
        )
