"""Forked parse workers hold none of the agent's pipes and sockets: holding the write end of
`git cat-file`'s stdin kept git from ever seeing EOF, and every `run --once`, `diff` and
shutdown waited out CatFile's close timeout."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitkrm.source.catfile import CatFile
from gitkrm.sync import pool
from tests.source.source_gitrepo import RemoteRepo, git


def _inodes(kind: int) -> set[int]:
    """The inodes of this process's descriptors of one kind (S_IFIFO, S_IFSOCK)."""
    out: set[int] = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            st = os.fstat(int(name))
        except OSError:
            continue
        if stat.S_IFMT(st.st_mode) == kind:
            out.add(st.st_ino)
    return out


def _worker_pipes() -> set[int]:
    return _inodes(stat.S_IFIFO)


def _worker_sockets() -> set[int]:
    return _inodes(stat.S_IFSOCK)


@pytest.fixture
def fresh_pool() -> Iterator[None]:
    """The process-wide pool, forked anew by the test (and shut down after it)."""
    if pool.worker_count() < 2:
        pytest.skip("the parse pool needs two cores")
    pool.shutdown()
    yield
    pool.shutdown()


@pytest.fixture
def cat_file(tmp_path: Path) -> Iterator[CatFile]:
    repo = RemoteRepo(tmp_path / "repo")
    repo.write("a.yaml", "a: 1\n")
    repo.commit()
    repo.push()
    reader = CatFile(repo.bare)
    yield reader
    reader.close()


@pytest.mark.usefixtures("fresh_pool")
def test_workers_do_not_hold_cat_files_pipes(cat_file: CatFile) -> None:
    blob = git("rev-parse", "HEAD:a.yaml", cwd=cat_file._git_dir)
    assert cat_file.read_blobs([blob]) == {blob: b"a: 1\n"}  # the process runs
    proc = cat_file._proc
    assert proc is not None
    assert proc.stdin is not None
    assert proc.stdout is not None
    ours = {os.fstat(proc.stdin.fileno()).st_ino, os.fstat(proc.stdout.fileno()).st_ino}
    started = pool.get_pool()
    assert started is not None
    held = started.submit(_worker_pipes).result(timeout=60)
    assert not ours & held, "a parse worker holds git cat-file's pipes"
    # and so git sees EOF at once: close() does not wait out its timeout
    cat_file.close()
    assert proc.returncode is not None


@pytest.mark.usefixtures("fresh_pool")
def test_workers_do_not_hold_the_agents_sockets() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        ours = os.fstat(listener.fileno()).st_ino
        started = pool.get_pool()
        assert started is not None
        held = started.submit(_worker_sockets).result(timeout=60)
    assert ours not in held, "a parse worker holds the agent's listening socket"


def test_the_probe_sees_an_inherited_pipe() -> None:
    """The check above can fail: a plain fork child does hold a pipe it inherits."""
    r, w = os.pipe()
    try:
        ino = os.fstat(w).st_ino
        child_r, child_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.write(child_w, b"1" if ino in _worker_pipes() else b"0")
            os._exit(0)
        os.close(child_w)
        try:
            assert os.read(child_r, 1) == b"1"
        finally:
            os.close(child_r)
            os.waitpid(pid, 0)
    finally:
        os.close(r)
        os.close(w)
