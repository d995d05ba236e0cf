"""The Git plumbing the reporter needs, on a source's cache repository.

Nothing here touches a work tree or the tracked ref. Reads (refs, blobs, a note of a
commit, a commit's message) go through one long-lived `git cat-file --batch-command`
(`CatFile`): no process per lookup. Writes go in batches: one `git fast-import` writes the
blobs and commits of a whole write (the notes of the commits due and the status file),
chaining the commits of one ref and moving each ref only forward from the tip it was
given; `update-ref --stdin` moves several refs in one transaction. Every command runs
through the source's `GitRunner` (isolated config, timeouts, redacted errors), and remote
commands get their credentials from the source's `CredentialProvider`, so there is one
credential path for fetching manifests and for pushing reports.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitkrm.errors import GitkrmError, InternalError
from gitkrm.source import GitSource
from gitkrm.source.catfile import CatFile
from gitkrm.source.credentials import CredentialProvider
from gitkrm.source.gitcli import GitResult, GitRunner, classify
from gitkrm.source.redact import split_userinfo

ZERO = "0" * 40
_OID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
NOTES_MESSAGE = "Notes added by 'git notes add'"
"""The message `git notes add` gives each notes commit; ours say the same."""
_LINEAGE = 4096  # commits written here whose parent is remembered (is_ancestor without git)


@dataclass(frozen=True, slots=True)
class RemoteTarget:
    """Where a source's reports go: its cache repository and its remote (no user-info)."""

    git_dir: Path
    url: str
    credentials: CredentialProvider
    timeout: float = 120.0

    @classmethod
    def of_source(cls, source: GitSource) -> RemoteTarget:
        """The target of a Git source: the same cache, URL and credentials it fetches with."""
        spec = source.spec
        parts = split_userinfo(spec.url)
        url = parts.url
        if "://" not in url and not _scp_like(url):
            url = os.path.abspath(url)  # as GitSource does: the same repo from any cwd
        creds = CredentialProvider(
            spec.auth,
            url_username=parts.username,
            url_password=parts.password,
            ca_file=spec.ca_file,
        )
        return cls(git_dir=source.cache_dir, url=url, credentials=creds, timeout=spec.timeout)


def _scp_like(url: str) -> bool:
    colon, slash = url.find(":"), url.find("/")
    return colon > 0 and (slash < 0 or colon < slash)


@dataclass(frozen=True, slots=True)
class Rejection:
    """A ref the remote refused: `stale` when our tip is behind it (fetch and rebase),
    else the remote itself said no (a hook, protection, permissions)."""

    ref: str
    reason: str
    stale: bool


@dataclass(frozen=True, slots=True)
class FileCommit:
    """A commit on `ref` whose tree is its parent's (an empty one without a parent) with
    `path` set to `content` (or to the existing blob `blob`)."""

    ref: str
    path: str
    message: str
    content: bytes | None = None
    blob: str | None = None


@dataclass(frozen=True, slots=True)
class NoteCommit:
    """A commit on the notes ref `ref` setting the note of object `target` to `content`
    (or to the existing blob `blob`), as `git notes add -f` does."""

    ref: str
    target: str
    content: bytes | None = None
    blob: str | None = None


Write = FileCommit | NoteCommit


@dataclass(frozen=True, slots=True)
class Written:
    """What a write became: its blob, and its commit (None for a note on an object the
    cache does not have as a commit, written by `git notes add`)."""

    blob: str
    commit: str | None


def blob_id(data: bytes, *, like: str = ZERO) -> str:
    """The id Git gives `data` as a blob, in the hash of the id `like` (SHA-1 or SHA-256)."""
    h = hashlib.sha256() if len(like) == 64 else hashlib.sha1(usedforsecurity=False)
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def _commit_message(message: str) -> bytes:
    """`message` as `git commit-tree -m` stores it: one newline at the end."""
    data = message.encode()
    return data if not data or data.endswith(b"\n") else data + b"\n"


def _data(payload: bytes) -> bytes:
    return b"data %d\n%s\n" % (len(payload), payload)


class ReportRepo:
    """Local plumbing and remote fetch/push for one cache repository. `close` last."""

    def __init__(self, target: RemoteTarget, *, agent: str) -> None:
        self.target = target
        self.git_dir = target.git_dir
        self.url = target.url
        self.runner = GitRunner(git_dir=target.git_dir, timeout=target.timeout)
        self.reader = CatFile(target.git_dir, runner=self.runner)
        self._ident = f"gitkrm {agent} <{agent}@gitkrm.invalid>".encode()
        self._identity = {
            "GIT_AUTHOR_NAME": f"gitkrm {agent}",
            "GIT_AUTHOR_EMAIL": f"{agent}@gitkrm.invalid",
            "GIT_COMMITTER_NAME": f"gitkrm {agent}",
            "GIT_COMMITTER_EMAIL": f"{agent}@gitkrm.invalid",
        }
        self._parents: dict[str, str | None] = {}
        """Commits written here -> their parent: `is_ancestor` answers our own chains."""
        self._ancestry: dict[tuple[str, str], bool] = {}

    def redact_text(self, text: str) -> str:
        return self.target.credentials.redactor(text)

    def close(self) -> None:
        self.reader.close()

    async def _git(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        ok_codes: Sequence[int] = (0,),
        what: str | None = None,
        input: bytes | None = None,
    ) -> GitResult:
        return await self.runner.run(
            *args,
            env={**self._identity, **(env or {})},
            ok_codes=ok_codes,
            what=what,
            redactor=self.target.credentials.redactor,
            input=input,
        )

    # -- reading ------------------------------------------------------------------------

    async def rev(self, name: str) -> str | None:
        """The object a ref or revision names, None when there is none."""
        found = self.reader.info(name)
        return None if found is None else found[0]

    async def read_blob(self, oid: str) -> bytes:
        return self.reader.read_blobs([oid])[oid]

    async def blob_at(self, commit: str, path: str) -> str | None:
        return await self.rev(f"{commit}:{path}")

    async def message_of(self, commit: str) -> str:
        raw = self.reader.read_objects([commit]).get(commit) or b""
        _, _, message = raw.partition(b"\n\n")
        return message.decode("utf-8", "replace").strip()

    async def is_ancestor(self, a: str, b: str) -> bool:
        """Whether commit `a` is reachable from `b` (a push of `b` over `a` fast-forwards).
        Our own commits' parents are known; other pairs ask git once."""
        if a == b:
            return True
        known = self._ancestry.get((a, b))
        if known is not None:
            return known
        step: str | None = b
        for _ in range(_LINEAGE):
            if step is None or step not in self._parents:
                break
            step = self._parents[step]
            if step == a:
                return True
        if step is None:
            return False  # our chain reached a root commit without passing `a`
        res = await self._git("merge-base", "--is-ancestor", a, b, ok_codes=(0, 1))
        self._ancestry[(a, b)] = found = res.returncode == 0
        if len(self._ancestry) > _LINEAGE:
            self._ancestry.pop(next(iter(self._ancestry)))
        return found

    async def note_blob(self, ref: str, commit: str) -> str | None:
        """The blob of `commit`'s note in the notes commit `ref` (None: no note), at any
        fan-out of the notes tree (`ab/cdef...`), as `git notes list <commit>` finds it."""
        oid = commit if _OID.match(commit) else await self.rev(commit + "^{object}")
        if oid is None:
            return None
        prefix = ""
        for level in range(len(oid) // 2):
            found = self.reader.info(f"{ref}:{prefix}{oid[2 * level :]}")
            if found is not None and found[1] == "blob":
                return found[0]
            subtree = f"{prefix}{oid[2 * level : 2 * level + 2]}"
            below = self.reader.info(f"{ref}:{subtree}")
            if below is None or below[1] != "tree":
                return None
            prefix = subtree + "/"
        return None

    async def notes(self, ref: str) -> dict[str, str]:
        """commit -> note blob, for every note of the notes commit `ref` names (any ref,
        not only under refs/notes/; empty when it does not exist)."""
        if await self.rev(ref) is None:
            return {}
        res = await self._git("ls-tree", "-r", "-z", "--end-of-options", ref)
        out: dict[str, str] = {}
        for record in res.stdout.split(b"\0"):
            meta, _, path = record.partition(b"\t")
            parts = meta.split()
            name = path.decode().replace("/", "")  # fan-out directories: ab/cdef... -> abcdef...
            if len(parts) == 3 and parts[1] == b"blob" and _OID.match(name):
                out[name] = parts[2].decode()
        return out

    # -- writing ------------------------------------------------------------------------

    async def write_blob(self, data: bytes) -> str:
        res = await self._git("hash-object", "-w", "--stdin", input=data)
        return res.stdout.decode().strip()

    async def commit(
        self, writes: Sequence[Write], *, parents: Mapping[str, str | None], force: bool = False
    ) -> list[Written]:
        """Write `writes` in one `git fast-import`: their blobs, and one commit each,
        chained per ref in order from the tip `parents[ref]` (None: a root commit). A ref
        moves only forward from where it is (one that moved elsewhere meanwhile is an
        error and stays where it is), unless `force` (a scratch ref). A note on an object
        that is not a commit here (fast-import notes commits only) is written afterwards
        by `git notes add`."""
        stream: list[bytes] = []
        fallback: list[tuple[int, NoteCommit]] = []
        blob_marks: list[int] = []
        commit_marks: dict[int, int] = {}  # write index -> mark
        chained: dict[str, int] = {}  # ref -> mark of its last commit in the stream
        order: list[tuple[int, str]] = []  # (mark, ref) of the commits, in order
        for i, w in enumerate(writes):
            mark = 2 * i + 1
            blob = f":{mark}".encode()
            if w.content is not None:
                stream.append(b"blob\nmark :%d\n%s" % (mark, _data(w.content)))
            elif w.blob is not None:
                blob = w.blob.encode()
            else:
                raise ValueError("a write needs content or a blob")
            blob_marks.append(mark)
            if isinstance(w, NoteCommit) and self.reader.info_type(w.target) != "commit":
                fallback.append((i, w))
                continue
            head = [b"commit " + w.ref.encode(), b"mark :%d" % (mark + 1)]
            head += [b"author " + self._ident + b" now", b"committer " + self._ident + b" now"]
            stream.append(b"\n".join(head) + b"\n")
            if isinstance(w, NoteCommit):
                stream.append(_data(_commit_message(NOTES_MESSAGE)))
            else:
                stream.append(_data(_commit_message(w.message)))
            if w.ref not in chained and parents.get(w.ref) is not None:
                stream.append(b"from %s\n" % str(parents[w.ref]).encode())
            if isinstance(w, NoteCommit):
                stream.append(b"N %s %s\n\n" % (blob, w.target.encode()))
            else:
                stream.append(b"M 100644 %s %s\n\n" % (blob, w.path.encode()))
            chained[w.ref] = mark + 1
            commit_marks[i] = mark + 1
            order.append((mark + 1, w.ref))
        marks = [m for i, m in enumerate(blob_marks) if writes[i].content is not None]
        marks += [m for m, _ in order]
        oids: dict[int, str] = {}
        if marks:
            stream += [b"get-mark :%d\n" % m for m in marks]
            stream.append(b"done\n")
            flags = ["--quiet", "--done", "--date-format=now"] + (["--force"] if force else [])
            try:
                res = await self._git("fast-import", *flags, input=b"".join(stream))
            except GitkrmError:
                for crash in self.git_dir.glob("fast_import_crash_*"):
                    crash.unlink(missing_ok=True)  # its report: the error says what failed
                raise
            oids = dict(zip(marks, res.stdout.decode().split(), strict=True))
        tips: dict[str, str | None] = dict(parents)
        for mark, ref in order:
            self._remember(oids[mark], tips.get(ref))
            tips[ref] = oids[mark]
        out: list[Written] = []
        for i, w in enumerate(writes):
            blob_oid = w.blob if w.content is None else oids[blob_marks[i]]
            assert blob_oid is not None
            commit_mark = commit_marks.get(i)
            out.append(Written(blob_oid, None if commit_mark is None else oids[commit_mark]))
        for i, w in fallback:
            await self._git("notes", f"--ref={w.ref}", "add", "-f", "-C", out[i].blob, w.target)
        return out

    def _remember(self, commit: str, parent: str | None) -> None:
        self._parents[commit] = parent
        if len(self._parents) > _LINEAGE:
            self._parents.pop(next(iter(self._parents)))

    async def set_note(self, ref: str, commit: str, blob: str) -> None:
        await self.commit([NoteCommit(ref, commit, blob=blob)], parents={ref: await self.rev(ref)})

    async def update_ref(self, ref: str, new: str, *, old: str | None, message: str) -> None:
        """Move `ref` to `new` only if it still is at `old` (None: it must not exist)."""
        await self._git("update-ref", "-m", message, ref, new, old or ZERO)

    async def set_ref(self, ref: str, new: str, *, message: str) -> None:
        await self._git("update-ref", "-m", message, ref, new)

    async def update_refs(
        self, refs: Mapping[str, tuple[str | None, str | None]], *, message: str
    ) -> None:
        """ref -> (new, old) in one transaction: each ref moves to `new` (None: deleted)
        only if it still is at `old` (None: it must not exist); all or none."""
        lines = []
        for ref, (new, old) in refs.items():
            if new is None:
                lines.append(f"delete {ref} {old or ''}\n")
            else:
                lines.append(f"update {ref} {new} {old or ZERO}\n")
        await self._git("update-ref", "-m", message, "--stdin", input="".join(lines).encode())

    async def set_refs(self, refs: Mapping[str, str], *, message: str) -> None:
        """Move every ref of `refs` to its value, in one transaction."""
        if not refs:
            return
        lines = "".join(f"update {ref} {new}\n" for ref, new in refs.items())
        await self._git("update-ref", "-m", message, "--stdin", input=lines.encode())

    async def delete_ref(self, ref: str) -> None:
        await self._git("update-ref", "-d", ref)

    # -- remote ---------------------------------------------------------------------------

    async def _remote(self, *args: str, what: str, ok_codes: Sequence[int] = (0,)) -> GitResult:
        auth = self.target.credentials.env()
        return await self.runner.run(
            *args, auth=auth, remote=True, what=what, ok_codes=ok_codes, env=self._identity
        )

    async def ls_remote(self, refs: Sequence[str]) -> dict[str, str]:
        """Which of `refs` the remote has, and where they point."""
        res = await self.runner.run(
            "ls-remote",
            "--end-of-options",
            self.url,
            *refs,
            auth=self.target.credentials.env(),
            remote=True,
            in_repo=False,
            what=f"ls-remote {self.url}",
        )
        out: dict[str, str] = {}
        for line in res.stdout.decode().splitlines():
            oid, _, name = line.partition("\t")
            if name in refs and _OID.match(oid):
                out[name] = oid
        return out

    async def fetch(self, refspecs: Sequence[str]) -> None:
        await self._remote(
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--end-of-options",
            self.url,
            *refspecs,
            what=f"fetch reports from {self.url}",
        )

    async def push(self, refspecs: Sequence[str]) -> list[Rejection]:
        """Push without force; the refs the remote refused (empty: all went in)."""
        res = await self._remote(
            "push",
            "--porcelain",
            "--end-of-options",
            self.url,
            *refspecs,
            what=f"push reports to {self.url}",
            ok_codes=(0, 1),
        )
        out = res.stdout.decode("utf-8", "replace")
        rejected: list[Rejection] = []
        seen = 0
        for line in out.splitlines():
            flag, sep, rest = line.partition("\t")
            if not sep:
                continue
            seen += 1
            if flag != "!":
                continue
            spec, _, summary = rest.partition("\t")
            dst = spec.rpartition(":")[2]
            stale = summary.startswith("[rejected]")
            rejected.append(Rejection(dst, self.redact_text(summary.strip()), stale))
        if seen < len(refspecs):
            # Exit 1 without a line per ref: the push did not get to the refs at all.
            raise classify(res.stderr, what=f"push reports to {self.url}", remote=True)
        if not rejected and "Done" not in out:
            raise InternalError(f"push reports to {self.url}: no answer from the remote")
        return rejected
