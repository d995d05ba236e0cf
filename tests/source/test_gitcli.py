from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from gitkrm.errors import InternalError, NotFound, ServiceUnavailable, Timeout, Unauthorized
from gitkrm.source.catfile import CatFile
from gitkrm.source.credentials import CredentialProvider, HttpsAuth, SecretRef, SshAuth
from gitkrm.source.gitcli import CorruptCache, GitResult, GitRunner, base_env, classify
from gitkrm.source.redact import Redactor
from gitkrm.source.snapshot import git_blob_id
from tests.source.source_gitrepo import processes_mentioning


@pytest.mark.parametrize(
    ("stderr", "cls"),
    [
        ("fatal: Authentication failed for 'https://h/r/'", Unauthorized),
        ("git@h: Permission denied (publickey).\nfatal: Could not read from remote", Unauthorized),
        ("Host key verification failed.\nfatal: Could not read from remote", Unauthorized),
        ("fatal: repository 'https://h/r/' not found", NotFound),
        ("fatal: couldn't find remote ref refs/heads/x", NotFound),
        ("fatal: unable to access 'https://h/': Failed to connect to h port 1", ServiceUnavailable),
        ("fatal: unable to access 'https://h/': Could not resolve host: h", ServiceUnavailable),
        ("error: inflate: data stream error\nfatal: loose object abc is corrupt", CorruptCache),
        ("fatal: bad config line 1 in file config", CorruptCache),
        ("something else entirely", InternalError),
    ],
)
def test_classify(stderr: str, cls: type[Exception]) -> None:
    err = classify(stderr, what="fetch", remote=True)
    assert type(err) is cls
    assert err.message.startswith("fetch")


def test_local_failures_are_never_remote_errors() -> None:
    assert type(classify("Connection refused", what="ls-tree", remote=False)) is InternalError


def test_env_is_isolated_from_user_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/agent.sock")
    env = base_env({})
    assert "GIT_DIR" not in env
    assert "SSH_AUTH_SOCK" not in env
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull
    assert env["GIT_CONFIG_NOSYSTEM"] == "1"


def test_basic_auth_goes_through_env_not_arguments(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("hunter2-secret\n")
    env = CredentialProvider(HttpsAuth(username="me", password=SecretRef(file=tmp_path / "pw")))
    out = env.env()
    assert out.env["GITKRM_GIT_PASSWORD"] == "hunter2-secret"
    assert all("hunter2" not in v for _, v in out.config)
    assert out.redactor("x hunter2-secret y") == "x *** y"


def test_ssh_command_pins_key_and_known_hosts(tmp_path: Path) -> None:
    key, kh = tmp_path / "id", tmp_path / "kh"
    key.write_text("KEY")
    key.chmod(0o600)
    kh.write_text("")
    provider = CredentialProvider(SshAuth(key_file=key, known_hosts=kh))
    cmd = provider.env().env["GIT_SSH_COMMAND"]
    for part in (
        f"-i {key}",
        "IdentitiesOnly=yes",
        f"UserKnownHostsFile={kh}",
        "StrictHostKeyChecking=yes",
        "BatchMode=yes",
    ):
        assert part in cmd
    provider.close()


def test_secret_ref_needs_exactly_one_place() -> None:
    with pytest.raises(Exception, match="exactly one"):
        SecretRef()
    with pytest.raises(Exception, match="exactly one"):
        SecretRef(file=Path("/x"), env="X")


async def test_runner_counts_calls_and_reports_errors(tmp_path: Path) -> None:
    runner = GitRunner(git_dir=tmp_path / "absent.git")
    with pytest.raises(CorruptCache):
        await runner.run("rev-parse", "HEAD")
    assert runner.calls["rev-parse"] == 1


async def _run(runner: GitRunner, sync: bool, *args: str, **kw: Any) -> GitResult:
    """`runner.run`, or its synchronous twin `run_sync`."""
    if sync:
        return runner.run_sync(*args, **kw)
    return await runner.run(*args, **kw)


@pytest.mark.parametrize("sync", [False, True])
async def test_both_runners_give_git_no_stdin_unless_input(sync: bool) -> None:
    """`hash-object --stdin` reads to EOF: /dev/null gives the empty blob at once (a
    terminal or an inherited pipe would block it); given input is what git reads."""
    runner = GitRunner(git_dir=None)
    empty = await _run(runner, sync, "hash-object", "--stdin", in_repo=False)
    assert empty.stdout.decode().strip() == git_blob_id(b"")
    given = await _run(runner, sync, "hash-object", "--stdin", in_repo=False, input=b"hi\n")
    assert given.stdout.decode().strip() == git_blob_id(b"hi\n")
    assert runner.calls["hash-object"] == 2


@pytest.mark.parametrize("sync", [False, True])
async def test_both_runners_classify_and_redact_alike(tmp_path: Path, sync: bool) -> None:
    runner = GitRunner(git_dir=tmp_path / "absent.git")
    redactor = Redactor(["hunter2-secret"])
    call = _run(runner, sync, "rev-parse", "HEAD", what="read hunter2-secret", redactor=redactor)
    with pytest.raises(CorruptCache) as e:
        await call
    assert e.value.message.startswith("read ***: local cache is damaged (fatal: ")
    assert "hunter2-secret" not in e.value.message


@pytest.mark.parametrize("sync", [False, True])
async def test_a_silent_remote_times_out_and_git_is_killed(sync: bool) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections complete, but nothing ever answers
        url = f"https://127.0.0.1:{silent.getsockname()[1]}/repo.git"
        runner = GitRunner(git_dir=None, timeout=1.0)
        call = _run(runner, sync, "ls-remote", url, in_repo=False, remote=True)
        with pytest.raises(Timeout, match="no answer within 1s"):
            await call
        assert not processes_mentioning(url)


def test_user_config_is_the_users_own_and_isolated_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "gitkrm.test")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "from-the-user")
    mine = GitRunner(git_dir=None, user_config=True)
    res = mine.run_sync("config", "--get", "gitkrm.test", in_repo=False)
    assert res.stdout.decode().strip() == "from-the-user"
    isolated = GitRunner(git_dir=None)
    res = isolated.run_sync("config", "--get", "gitkrm.test", in_repo=False, ok_codes=(0, 1))
    assert (res.returncode, res.stdout) == (1, b"")


def test_cat_file_runs_through_the_runner(tmp_path: Path) -> None:
    repo = tmp_path / "repo.git"
    GitRunner(git_dir=None).run_sync("init", "--quiet", "--bare", str(repo), in_repo=False)
    runner = GitRunner(git_dir=repo)
    blob = runner.run_sync("hash-object", "-w", "--stdin", input=b"x\n").stdout.decode().strip()
    reader = CatFile(repo, runner=runner)
    try:
        assert reader.info(blob) == (blob, "blob", 2)
        assert reader.info("refs/heads/nope") is None
        assert reader.read_blobs([blob]) == {blob: b"x\n"}
    finally:
        reader.close()
    assert runner.calls["cat-file"] == 1  # one long-lived process for every lookup
