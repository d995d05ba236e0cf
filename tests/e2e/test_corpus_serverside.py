"""Every corpus repository (tests/corpus) synced with `--apply-mode server-side` and synced
again (#22): the second run configures nothing and `gitkrm diff --apply-mode server-side`
exits 0 after each, as kubectl diff --server-side finds nothing on a cluster. Manifests
that leave out what the server defaults are the point: public bundles do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.corpus.cases import CASES
from tests.e2e.e2e_support import gitkrm
from tests.source.source_gitrepo import RemoteRepo


def _cases() -> list[Any]:
    return [pytest.param(c, id=c.id) for c in CASES if not c.invalid and c.xfail is None]


@pytest.mark.parametrize("case", _cases())
def test_corpus_repository_server_side_twice(
    case: Any, repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    case.copy_to(repo.work)
    repo.commit(f"{case.repo}: vendored")
    repo.push()
    flags = ("--repo", repo.url, "--path", case.path, "--state", str(state))
    ss = (*flags, "--apply-mode", "server-side")
    first = gitkrm("run", "--once", *ss, cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    diff = gitkrm("diff", *ss, cwd=tmp_path)
    assert diff.returncode == 0, f"diff after the first sync:\n{diff.stdout}{diff.stderr}"
    again = gitkrm("run", "--once", *ss, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert " 0 configured" in again.stdout, again.stdout
    diff = gitkrm("diff", *ss, cwd=tmp_path)
    assert diff.returncode == 0, f"diff after the second sync:\n{diff.stdout}{diff.stderr}"
