"""Which repository a child's URL names: the parent's, or one of its own.

Two spellings of one repository are alike (`normalise_url`: no user-info, no `.git`, the
host in lower case, `https://`, `ssh://` and `git@host:` alike; a local path and its
`file://` URL alike).

A user often runs `gitkrm run --repo .` in a clone of their GitOps repository, whose
Argo CD Applications and Flux GitRepositories name the clone's remote
(`https://github.com/org/repo`). At the parent's revision such a child *is* the clone
(`clone_of`), as it is on the cluster where the parent is the remote: reading the remote
instead would miss the local commits the parent syncs (and, offline, fail). At another
branch or tag the clone has (`has_ref`: its own branches, not its remote-tracking ones)
it is the clone at that ref; otherwise the remote is read, as named.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

from gitkrm.source import GitRef, RefKind
from gitkrm.source.gitcli import GitRunner

from ..config import SourceConfig, is_remote_url

_PORTS: Final = {"https": "443", "http": "80", "ssh": "22", "git": "9418"}
_REMOTES: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}
"""A local repository's remote URLs (normalised), by its config file, with its mtime and
size (read again when either changes)."""


def normalise_url(url: str) -> str:
    """A key that is equal for two spellings of one repository."""
    u = url.strip()
    if u.startswith("file://"):
        return "file:" + os.path.realpath(unquote(urlsplit(u).path))
    if not is_remote_url(u):
        return "file:" + os.path.realpath(os.path.expanduser(u))
    if "://" not in u:  # scp-like git@host:org/repo
        userhost, _, path = u.partition(":")
        host, port = userhost.rpartition("@")[2], ""
    else:
        parts = urlsplit(u)
        host = parts.hostname or ""
        port = str(parts.port) if parts.port and str(parts.port) != _PORTS.get(parts.scheme) else ""
        path = parts.path
    path = path.strip("/").removesuffix(".git").rstrip("/")
    return f"{host.lower()}{':' + port if port else ''}/{path}"


def same_repository(url: str, parent: SourceConfig) -> bool:
    """`url` is the parent's own URL (in any spelling)."""
    return normalise_url(url) == normalise_url(parent.url)


async def clone_of(url: str, parent: SourceConfig) -> bool:
    """The parent is a local repository with a remote that `url` names."""
    if is_remote_url(parent.url) or not is_remote_url(url):
        return False
    return normalise_url(url) in await _remotes(parent.url)


async def _remotes(local: str) -> frozenset[str]:
    root = Path(normalise_url(local).removeprefix("file:"))
    # A clone's config, or a bare repository's; `--file` reads it without the ownership
    # check git makes of a repository (the agent may run as another user).
    config = next((c for c in (root / ".git" / "config", root / "config") if c.is_file()), None)
    if config is None:
        return frozenset()
    key = str(config)
    st = config.stat()
    mtime = (st.st_mtime_ns, st.st_size)
    cached = _REMOTES.get(key)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    result = await GitRunner(git_dir=None).run(
        "config", "--file", key, "--get-regexp", r"^remote\..+\.url$",
        in_repo=False, ok_codes=(0, 1), what=f"read the remotes of {local}",
    )  # fmt: skip
    urls = frozenset(
        normalise_url(line.split(maxsplit=1)[1])
        for line in result.stdout.decode("utf-8", "replace").splitlines()
        if len(line.split(maxsplit=1)) == 2
    )
    _REMOTES[key] = (mtime, urls)
    return urls


async def has_ref(local: str, ref: GitRef) -> bool:
    """The local repository has branch or tag `ref` of its own (as a source of it would
    see it: `git ls-remote` of its path)."""
    if ref.kind not in (RefKind.BRANCH, RefKind.TAG):
        return False
    name = f"refs/{'heads' if ref.kind is RefKind.BRANCH else 'tags'}/{ref.name}"
    result = await GitRunner(git_dir=None).run(
        "ls-remote", "--end-of-options", local, name, in_repo=False, ok_codes=(0, 2),
        what=f"look up {name} in {local}",
    )  # fmt: skip
    return bool(result.stdout.strip())
