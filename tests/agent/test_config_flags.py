"""The source the command-line flags describe (`gitkrm.agent.config_flags`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitkrm.agent.config import SourceConfig, check_name
from gitkrm.agent.config_flags import from_flags
from gitkrm.errors import BadRequest
from gitkrm.source import GitRef, RefKind


def _flags(repo: str, **kw: object) -> SourceConfig:
    args: dict[str, object] = {
        "branch": None,
        "tag": None,
        "commit": None,
        "path": None,
        "source_name": "default",
        "interval": None,
    }
    args.update(kw)
    return from_flags(repo=repo, **args)  # type: ignore[arg-type]


def test_plain_directory_is_a_directory_source(tmp_path: Path) -> None:
    c = _flags(str(tmp_path), path="apps")
    assert c.is_directory
    assert c.url == str(tmp_path)
    assert c.path == "apps"
    assert c.interval == 30.0
    with pytest.raises(BadRequest, match="plain directory"):
        _flags(str(tmp_path), branch="main")


def test_local_repository_is_a_git_source(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    c = _flags(str(tmp_path / "r.git"), tag="v1", interval=5.0)
    assert not c.is_directory
    assert c.ref == GitRef(RefKind.TAG, "v1")
    assert c.interval == 5.0
    subprocess.run(["git", "init", "-q", str(tmp_path / "work")], check=True)
    assert _flags(str(tmp_path / "work")).ref == GitRef(RefKind.BRANCH, "main")


def test_remote_urls_and_missing_paths(tmp_path: Path) -> None:
    c = _flags("https://user:tok@example.com/r.git", commit="a" * 40)
    assert c.safe_url == "https://example.com/r.git"
    assert "tok" not in repr(c)
    assert _flags("git@example.com:o/r.git").url == "git@example.com:o/r.git"
    with pytest.raises(BadRequest, match="no such directory"):
        _flags(str(tmp_path / "missing"))
    (tmp_path / "f.yaml").write_text("")
    with pytest.raises(BadRequest, match="not a directory"):
        _flags(str(tmp_path / "f.yaml"))


@pytest.mark.parametrize("bad", ["Apps", "a.b", "-x", "x" * 64, ""])
def test_names_are_dns_labels(bad: str) -> None:
    with pytest.raises(BadRequest, match="--source-name"):
        check_name(bad, what="--source-name")
    with pytest.raises(BadRequest):
        _flags("https://example.com/r.git", source_name=bad)
