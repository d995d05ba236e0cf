"""`run --once` and `diff` end when their work is done: no child process holds a pipe the
agent waits on (a forked parse worker holding `git cat-file`'s stdin cost 5 s a run)."""

from __future__ import annotations

from pathlib import Path

from gitkrm.source.catfile import CLOSE_TIMEOUT
from gitkrm.sync.pool import PARALLEL_MIN_BYTES, worker_count
from tests.e2e.e2e_support import gitkrm
from tests.source.source_gitrepo import RemoteRepo

WAITED = "did not end within"  # CatFile.close's warning when git outlived its input


def _big_repo(repo: RemoteRepo) -> None:
    """More manifest bytes than PARALLEL_MIN_BYTES, so the parse runs in forked workers."""
    filler = "x" * 1000
    files = PARALLEL_MIN_BYTES // 1000 + 50
    for i in range(files):
        repo.write(
            f"cms/cm-{i}.yaml",
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n"
            f"  namespace: default\ndata:\n  filler: {filler}\n",
        )
    repo.commit("many config maps")
    repo.push()


def test_run_once_and_diff_do_not_wait_on_a_child(repo: RemoteRepo, state: Path) -> None:
    assert worker_count() >= 2, "this machine parses inline: the test would prove nothing"
    _big_repo(repo)
    run = gitkrm("run", "--repo", repo.url, "--once", "--state", str(state), cwd=state.parent)
    assert run.returncode == 0, run.stderr
    assert WAITED not in run.stderr, f"run --once waited {CLOSE_TIMEOUT}s on git cat-file"
    diff = gitkrm("diff", "--repo", repo.url, "--state", str(state), cwd=state.parent)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    assert WAITED not in diff.stderr, f"diff waited {CLOSE_TIMEOUT}s on git cat-file"
