"""The W10k workload as a Git repository: a work tree committed and pushed to a bare remote."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from benchmarks.workload import write_tree

_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def git(*args: str, cwd: Path) -> str:
    """Run git with a clean configuration; its output, stripped."""
    res = subprocess.run(["git", *args], cwd=cwd, env=_ENV, check=True, capture_output=True)
    return res.stdout.decode().strip()


def make_repo(root: Path) -> tuple[Path, Path]:
    """W10k committed in `root/work` and pushed to the bare `root/remote.git`."""
    work = root / "work"
    write_tree(work)
    return work, publish(work, root, "W10k")


def publish(work: Path, root: Path, message: str) -> Path:
    """Commit the tree in `work` and push it to a new bare `root/remote.git`."""
    bare = root / "remote.git"
    git("init", "-q", "--initial-branch=main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", message, cwd=work)
    git("init", "-q", "--bare", str(bare), cwd=root)
    git("push", "-q", str(bare), "HEAD:refs/heads/main", cwd=work)
    return bare
