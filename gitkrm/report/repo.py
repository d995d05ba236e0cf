"""The Git plumbing the reporter needs, on a source's cache repository.

Nothing here touches a work tree or the tracked ref: blobs go in with `hash-object`, trees
are built in a private index file (`read-tree`, `update-index`, `write-tree`), commits with
`commit-tree` and refs move with `update-ref` (compare-and-swap). Every command runs
through the source's `GitRunner` (isolated config, timeouts, redacted errors), and remote
commands get their credentials from the source's `CredentialProvider`, so there is one
credential path for fetching manifests and for pushing reports.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitkrm.errors import InternalError
from gitkrm.source import GitSource
from gitkrm.source.credentials import CredentialProvider
from gitkrm.source.gitcli import GitResult, GitRunner, classify
from gitkrm.source.redact import split_userinfo

ZERO = "0" * 40
_OID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_TMP = "gitkrm-report"


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


class ReportRepo:
    """Local plumbing and remote fetch/push for one cache repository."""

    def __init__(self, target: RemoteTarget, *, agent: str) -> None:
        self.target = target
        self.git_dir = target.git_dir
        self.url = target.url
        self.runner = GitRunner(git_dir=target.git_dir, timeout=target.timeout)
        self._identity = {
            "GIT_AUTHOR_NAME": f"gitkrm {agent}",
            "GIT_AUTHOR_EMAIL": f"{agent}@gitkrm.invalid",
            "GIT_COMMITTER_NAME": f"gitkrm {agent}",
            "GIT_COMMITTER_EMAIL": f"{agent}@gitkrm.invalid",
        }

    def redact_text(self, text: str) -> str:
        return self.target.credentials.redactor(text)

    async def _git(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        ok_codes: Sequence[int] = (0,),
        what: str | None = None,
    ) -> GitResult:
        return await self.runner.run(
            *args,
            env={**self._identity, **(env or {})},
            ok_codes=ok_codes,
            what=what,
            redactor=self.target.credentials.redactor,
        )

    # -- objects and refs ---------------------------------------------------------------

    async def rev(self, name: str) -> str | None:
        """The object a ref or revision names, None when there is none."""
        res = await self._git(
            "rev-parse", "-q", "--verify", "--end-of-options", name, ok_codes=(0, 1)
        )
        out = res.stdout.decode().strip()
        return out or None

    @contextlib.contextmanager
    def _scratch(self) -> Iterator[Path]:
        base = self.git_dir / _TMP
        base.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(dir=base) as d:
            yield Path(d)

    async def write_blob(self, data: bytes) -> str:
        with self._scratch() as d:
            path = d / "blob"
            path.write_bytes(data)
            res = await self._git("hash-object", "-w", "--no-filters", "--", str(path))
        return res.stdout.decode().strip()

    async def read_blob(self, oid: str) -> bytes:
        return (await self._git("cat-file", "blob", oid)).stdout

    async def update_ref(self, ref: str, new: str, *, old: str | None, message: str) -> None:
        """Move `ref` to `new` only if it still is at `old` (None: it must not exist)."""
        await self._git("update-ref", "-m", message, ref, new, old or ZERO)

    async def set_ref(self, ref: str, new: str, *, message: str) -> None:
        await self._git("update-ref", "-m", message, ref, new)

    async def delete_ref(self, ref: str) -> None:
        await self._git("update-ref", "-d", ref)

    async def is_ancestor(self, a: str, b: str) -> bool:
        """Whether commit `a` is reachable from `b` (a push of `b` over `a` fast-forwards)."""
        if a == b:
            return True
        res = await self._git("merge-base", a, b, ok_codes=(0, 1))
        return res.stdout.decode().strip() == a

    async def tree_with(self, base: str | None, path: str, blob: str) -> str:
        """The tree of commit `base` (or an empty one) with `path` set to `blob`; every other
        entry is kept as it is."""
        with self._scratch() as d:
            env = {"GIT_INDEX_FILE": str(d / "index")}
            if base is None:
                await self._git("read-tree", "--empty", env=env)
            else:
                await self._git("read-tree", base, env=env)
            await self._git(
                "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env
            )
            res = await self._git("write-tree", env=env)
        return res.stdout.decode().strip()

    async def commit_tree(self, tree: str, *, parent: str | None, message: str) -> str:
        args = ["commit-tree", tree, "-m", message]
        if parent is not None:
            args += ["-p", parent]
        return (await self._git(*args)).stdout.decode().strip()

    async def blob_at(self, commit: str, path: str) -> str | None:
        return await self.rev(f"{commit}:{path}")

    async def message_of(self, commit: str) -> str:
        res = await self._git("log", "-1", "--format=%B", commit)
        return res.stdout.decode("utf-8", "replace").strip()

    # -- notes --------------------------------------------------------------------------

    async def note_blob(self, ref: str, commit: str) -> str | None:
        res = await self._git("notes", f"--ref={ref}", "list", commit, ok_codes=(0, 1))
        out = res.stdout.decode().strip()
        return out or None

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

    async def set_note(self, ref: str, commit: str, blob: str) -> None:
        await self._git("notes", f"--ref={ref}", "add", "-f", "-C", blob, commit)

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
