"""A bare "remote" repository and a work clone that tests commit and push from."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from gitkrm.source import GitSource, GitSourceSpec
from tests.support.closing import Made

ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "LC_ALL": "C",
}


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    res = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {res.stderr}")
    return res.stdout.strip()


class RemoteRepo:
    """`bare` is what sources fetch from; `work` is where tests make commits."""

    def __init__(self, root: Path, *, branch: str = "main") -> None:
        self.bare = root / "remote.git"
        self.work = root / "work"
        self.branch = branch
        root.mkdir(parents=True, exist_ok=True)
        git("init", "-q", "--bare", f"--initial-branch={branch}", str(self.bare), cwd=root)
        git("init", "-q", f"--initial-branch={branch}", str(self.work), cwd=root)
        git("remote", "add", "origin", str(self.bare), cwd=self.work)

    @property
    def url(self) -> str:
        return str(self.bare)

    def write(self, path: str, content: str | bytes) -> None:
        p = self.work / path
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        p.write_bytes(content)

    def symlink(self, path: str, target: str) -> None:
        p = self.work / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.symlink_to(target)

    def remove(self, path: str) -> None:
        git("rm", "-q", "-r", path, cwd=self.work)

    def commit(self, message: str = "change", *, env: dict[str, str] | None = None) -> str:
        git("add", "-A", cwd=self.work)
        git("commit", "-q", "--allow-empty", "-m", message, cwd=self.work, env=env)
        return self.head()

    def sign_commit(self, message: str, *, gnupghome: Path, key: str) -> str:
        git("add", "-A", cwd=self.work)
        git(
            "-c",
            f"user.signingkey={key}",
            "commit",
            "-q",
            "--allow-empty",
            "-S",
            "-m",
            message,
            cwd=self.work,
            env={"GNUPGHOME": str(gnupghome)},
        )
        return self.head()

    def publish(
        self, message: str = "change", files: Mapping[str, str | bytes] | None = None
    ) -> str:
        """Write `files` (path: content), commit everything and push the branch: the commit."""
        for path, content in (files or {}).items():
            self.write(path, content)
        sha = self.commit(message)
        self.push()
        return sha

    def head(self) -> str:
        return git("rev-parse", "HEAD", cwd=self.work)

    def push(self, ref: str | None = None, *, force: bool = False) -> None:
        args = ["push", "-q", "origin", ref or f"HEAD:refs/heads/{self.branch}"]
        if force:
            args.insert(1, "--force")
        git(*args, cwd=self.work)

    def tag(self, name: str, *, annotated: bool = True) -> None:
        if annotated:
            git("tag", "-a", name, "-m", name, cwd=self.work)
        else:
            git("tag", name, cwd=self.work)
        git("push", "-q", "origin", f"refs/tags/{name}", cwd=self.work)

    def delete_remote_ref(self, ref: str) -> None:
        git("push", "-q", "origin", f":{ref}", cwd=self.work)


SourceFactory = Callable[..., GitSource]


@asynccontextmanager
async def git_sources(cache_root: Path, *, name: str) -> AsyncIterator[SourceFactory]:
    """A builder of GitSources of a URL (spec fields as keywords, `name` unless given), each
    with its cache `cache_root/<cache>`; all closed on leaving the `async with`."""
    async with Made[GitSource]() as made:

        def make(url: str, *, cache: str = "cache", **spec: Any) -> GitSource:
            spec.setdefault("name", name)
            src = GitSource(GitSourceSpec(url=url, **spec), cache_dir=cache_root / cache)
            return made.keep(src)

        yield make


def processes_mentioning(text: str) -> list[str]:
    """The command lines of running processes that contain `text`."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if text.encode() in cmdline:
                found.append(cmdline.decode(errors="replace"))
    return found
