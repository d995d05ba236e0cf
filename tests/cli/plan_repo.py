"""A Git remote with feature branches, and `gitkrm` commands run through the CLI, for the
`gitkrm plan` tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitkrm.cli.main import main
from tests.source.source_gitrepo import git
from tests.sync.sync_helpers import Remote, configmap


class Repo(Remote):
    """`Remote` whose work clone can switch branches and push them."""

    def checkout(self, name: str, *, start: str = "main") -> None:
        git("checkout", "-q", "-B", name, start, cwd=self.work)

    def commit_to(self, message: str = "change", *, branch: str) -> str:
        git("add", "-A", cwd=self.work)
        git("commit", "-q", "--allow-empty", "-m", message, cwd=self.work)
        git("push", "-q", "--force", "origin", f"HEAD:refs/heads/{branch}", cwd=self.work)
        return git("rev-parse", "HEAD", cwd=self.work)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def plan_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = cli(capsys, "plan", "-o", "json", *args)
    return code, json.loads(out), err


def seeded(tmp_path: Path, n: int = 4) -> Repo:
    """A repository whose main has `n` ConfigMaps in namespace default."""
    repo = Repo(tmp_path / "repo")
    for i in range(n):
        repo.write(f"cm-{i}.yaml", configmap(f"cm-{i}", ns="default", data=f"a: '{i}'"))
    repo.commit("seed")
    return repo
