"""The audit trail: a branch's commits with each one's sync results and health, read from
the notes (`refs/notes/gitkrm/*`) of any copy of the repository.

Three places to read from:
- a clone or any local repository (`repo_history`): the notes are fetched from its remote
  first (a clone does not fetch notes by itself), with the user's own git configuration;
- a remote URL (`url_history`): the branch and the notes are fetched into a temporary
  repository;
- an agent's state directory (`state_history`): the notes in its source caches, newest
  sync first (the caches hold only the commits that were synced).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitkrm.errors import BadRequest, GitkrmError, Invalid, NotFound
from gitkrm.source.catfile import CatFile
from gitkrm.source.gitcli import GitMissing, GitRunner
from gitkrm.source.redact import Redactor

from .formats import NOTE_KIND, NOTES_REF_PREFIX, entry_applied, entry_health, parse, parse_time

_SEP, _END = "\x1f", "\x1e"
_FORMAT = f"%H{_SEP}%ct{_SEP}%an{_SEP}%s{_END}"


@dataclass(frozen=True, slots=True)
class CommitInfo:
    sha: str
    time: dt.datetime | None = None
    author: str = ""
    subject: str = ""


@dataclass(frozen=True, slots=True)
class SyncRecord:
    """One source of one agent on one commit: its note entry."""

    agent: str
    source: str
    entry: Mapping[str, Any]

    @property
    def time(self) -> str:
        return str(self.entry.get("time", ""))

    @property
    def result(self) -> str:
        return str(self.entry.get("result", ""))

    @property
    def health(self) -> str:
        """The aggregate health (`formats.entry_health`: old notes read truthfully)."""
        return entry_health(self.entry)

    @property
    def applied(self) -> bool:
        """False for a revision refused outright: nothing of it was synced."""
        return entry_applied(self.entry)


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    commit: CommitInfo
    records: tuple[SyncRecord, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        c = self.commit
        return {
            "commit": c.sha,
            "time": c.time.strftime("%Y-%m-%dT%H:%M:%SZ") if c.time else None,
            "author": c.author,
            "subject": c.subject,
            "syncs": [
                {"agent": r.agent, "source": r.source, **r.entry, "health": r.health}
                for r in self.records
            ],
        }


@dataclass(frozen=True, slots=True)
class Filter:
    agent: str | None = None
    source: str | None = None

    def keep(self, agent: str, source: str) -> bool:
        return (self.agent is None or self.agent == agent) and (
            self.source is None or self.source == source
        )


class _Git:
    """git for reading, through the one `GitRunner`: isolated (an agent's cache) or with
    the user's configuration (a clone of theirs, a remote they fetch with their
    credentials)."""

    def __init__(self, git_dir: Path, *, isolated: bool, redactor: Redactor | None = None):
        self.git_dir = git_dir
        self.runner = GitRunner(git_dir=git_dir, user_config=not isolated)
        self.redact = redactor or Redactor()

    def run(self, *args: str, remote: bool = False, ok: Sequence[int] = (0,)) -> str:
        res = self.runner.run_sync(*args, remote=remote, ok_codes=ok, redactor=self.redact)
        return res.stdout.decode("utf-8", "replace")


def _notes_refs(git: _Git) -> list[str]:
    out = git.run("for-each-ref", "--format=%(refname)", NOTES_REF_PREFIX)
    return [line for line in out.splitlines() if line.startswith(NOTES_REF_PREFIX)]


def _notes(git: _Git) -> dict[str, dict[str, str]]:
    """agent -> commit -> note blob."""
    out: dict[str, dict[str, str]] = {}
    for ref in _notes_refs(git):
        agent = ref[len(NOTES_REF_PREFIX) :]
        listed = out.setdefault(agent, {})
        for line in git.run("notes", f"--ref={ref}", "list").splitlines():
            blob, _, commit = line.partition(" ")
            if commit:
                listed[commit] = blob
    return out


def _note_order(git: _Git) -> dict[str, int]:
    """commit -> when its note was first written, as a rank (higher: later), from the
    history of the notes refs. Note times have one-second resolution and a shallow cache
    can't tell which commit follows which: the notes refs' own history can."""
    order: dict[str, int] = {}
    for ref in _notes_refs(git):
        out = git.run("log", "--reverse", "--diff-filter=A", "--name-only", "--format=", ref)
        for line in out.splitlines():
            sha = line.strip().replace("/", "")
            if sha and sha not in order:
                order[sha] = len(order)
    return order


def _records(
    git_dir: Path, notes: Mapping[str, Mapping[str, str]], commits: Iterable[str], flt: Filter
) -> dict[str, list[SyncRecord]]:
    """commit -> its sync records, for `commits`, read in one batch."""
    wanted = set(commits)
    blobs = {
        (agent, c): b for agent, listed in notes.items() for c, b in listed.items() if c in wanted
    }
    if not blobs:
        return {}
    reader = CatFile(git_dir)
    try:
        data = reader.read_objects(sorted(set(blobs.values())))
    finally:
        reader.close()
    out: dict[str, list[SyncRecord]] = {}
    for (agent, commit), blob in sorted(blobs.items()):
        raw = data.get(blob)
        if raw is None:
            continue
        try:
            doc = parse(raw, kind=NOTE_KIND, what=f"note of {commit[:12]} by {agent}")
        except Invalid:
            continue  # not a gitkrm note (someone else's notes under our prefix)
        for source, entry in sorted((doc.get("sources") or {}).items()):
            if isinstance(entry, dict) and flt.keep(agent, source):
                out.setdefault(commit, []).append(SyncRecord(agent, source, entry))
    return out


def _parse_log(text: str) -> list[CommitInfo]:
    out: list[CommitInfo] = []
    for chunk in text.split(_END):
        chunk = chunk.strip("\n")
        if not chunk:
            continue
        sha, ct, author, subject = [*chunk.split(_SEP), "", "", ""][:4]
        when = dt.datetime.fromtimestamp(int(ct), dt.UTC) if ct.isdigit() else None
        out.append(CommitInfo(sha=sha, time=when, author=author, subject=subject))
    return out


def _log(git: _Git, rev: str, limit: int) -> list[CommitInfo]:
    return _parse_log(git.run("log", f"--max-count={limit}", f"--format={_FORMAT}", rev, "--"))


def git_dir_of(path: Path) -> Path:
    """The Git directory of a work tree or a bare repository at `path`."""
    if not path.exists():
        raise NotFound(f"{path}: no such repository")
    runner = GitRunner(git_dir=None, user_config=True)
    try:
        res = runner.run_sync("rev-parse", "--absolute-git-dir", cwd=path)
    except GitMissing:
        raise
    except GitkrmError:
        raise NotFound(f"{path} is not a Git repository") from None
    return Path(res.stdout.decode().strip())


def fetch_notes(git_dir: Path, *, remote: str | None = None) -> str | None:
    """Fetch every agent's notes from the repository's remote (`origin`, else its only
    one) into `refs/notes/gitkrm/*`. The remote fetched from, None when it has none."""
    git = _Git(git_dir, isolated=False)
    remotes = git.run("remote").split()
    if remote is None:
        if "origin" in remotes:
            remote = "origin"
        elif len(remotes) == 1:
            remote = remotes[0]
        else:
            return None
    git.run(
        "fetch",
        "--quiet",
        "--no-tags",
        remote,
        f"+{NOTES_REF_PREFIX}*:{NOTES_REF_PREFIX}*",
        remote=True,
    )
    return remote


def repo_history(
    git_dir: Path, *, rev: str = "HEAD", limit: int = 20, flt: Filter = Filter()
) -> list[HistoryEntry]:
    """The last `limit` commits of `rev` in a local repository, with their notes."""
    git = _Git(git_dir, isolated=False)
    if not git.run("rev-parse", "-q", "--verify", f"{rev}^{{commit}}", ok=(0, 1)).strip():
        raise NotFound(f"{rev!r} is not a commit in {git_dir}")
    commits = _log(git, rev, limit)
    records = _records(git_dir, _notes(git), (c.sha for c in commits), flt)
    return [HistoryEntry(c, tuple(records.get(c.sha, ()))) for c in commits]


def url_history(
    url: str, *, branch: str | None = None, limit: int = 20, flt: Filter = Filter()
) -> list[HistoryEntry]:
    """`repo_history` of a remote: its branch (default: its HEAD) and notes fetched into a
    temporary repository (the last `limit` commits only)."""
    redactor = Redactor()
    with tempfile.TemporaryDirectory(prefix="gitkrm-history-") as tmp:
        git_dir = Path(tmp) / "repo.git"
        GitRunner(git_dir=None).run_sync(
            "init", "--quiet", "--bare", "--", str(git_dir), in_repo=False
        )
        git = _Git(git_dir, isolated=False, redactor=redactor)
        head = f"refs/heads/{branch}" if branch else "HEAD"
        git.run(
            "fetch",
            "--quiet",
            "--no-tags",
            f"--depth={max(limit, 1)}",
            "--end-of-options",
            url,
            f"+{head}:refs/gitkrm/history",
            remote=True,
        )
        git.run(
            "fetch",
            "--quiet",
            "--no-tags",
            "--end-of-options",
            url,
            f"+{NOTES_REF_PREFIX}*:{NOTES_REF_PREFIX}*",
            remote=True,
        )
        return repo_history(git_dir, rev="refs/gitkrm/history", limit=limit, flt=flt)


def state_history(
    state_dir: Path, *, limit: int = 20, flt: Filter = Filter()
) -> list[HistoryEntry]:
    """The commits an agent with this state directory synced, newest sync first, from the
    notes in its source caches (`<state>/git/*`)."""
    root = state_dir / "git"
    if not root.is_dir():
        raise NotFound(
            f"no Git caches in {state_dir} (no Git source synced there yet; "
            "or read a repository with --repo)"
        )
    found: dict[str, tuple[CommitInfo, dict[tuple[str, str], SyncRecord]]] = {}
    ranks: dict[str, int] = {}
    for cache in sorted(p for p in root.iterdir() if (p / "HEAD").is_file()):
        git = _Git(cache, isolated=True)
        notes = _notes(git)
        commits = {c for listed in notes.values() for c in listed}
        if not commits:
            continue
        records = _records(cache, notes, commits, flt)
        for sha, rank in _note_order(git).items():
            ranks[sha] = max(ranks.get(sha, -1), rank)
        infos = (
            {
                c.sha: c
                for c in _parse_log(
                    git.run(
                        "log",
                        "--no-walk=unsorted",
                        "--ignore-missing",
                        f"--format={_FORMAT}",
                        *sorted(records),
                        "--",
                    )
                )
            }
            if records
            else {}
        )
        for commit, recs in records.items():
            info, merged = found.setdefault(commit, (infos.get(commit, CommitInfo(commit)), {}))
            if info.time is None and commit in infos:
                found[commit] = (infos[commit], merged)
            for r in recs:
                merged[(r.agent, r.source)] = r
    entries = [HistoryEntry(info, tuple(recs.values())) for info, recs in found.values()]

    def newest(e: HistoryEntry) -> tuple[dt.datetime, int]:
        times = []
        for r in e.records:
            with contextlib.suppress(ValueError):
                times.append(parse_time(r.time))
        latest = max(times) if times else dt.datetime.min.replace(tzinfo=dt.UTC)
        return latest, ranks.get(e.commit.sha, -1)

    entries.sort(key=newest, reverse=True)
    return entries[:limit]


def check_limit(n: int) -> int:
    if n < 1:
        raise BadRequest(f"-n must be at least 1, not {n}")
    return n
