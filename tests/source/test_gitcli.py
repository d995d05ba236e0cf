from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitkrm.errors import InternalError, NotFound, ServiceUnavailable, Unauthorized
from gitkrm.source.credentials import CredentialProvider, HttpsAuth, SecretRef, SshAuth
from gitkrm.source.gitcli import CorruptCache, GitRunner, base_env, classify


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
