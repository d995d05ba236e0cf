"""A local parent's remotes name it: read from its config, again when the config changes."""

from __future__ import annotations

from pathlib import Path

from gitkrm.agent.config import SourceConfig
from gitkrm.agent.tree.repourl import clone_of, has_ref
from gitkrm.source import GitRef, RefKind
from tests.source.source_gitrepo import git


async def test_a_clones_remotes_name_it_until_they_change(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git("init", "-q", str(clone), cwd=tmp_path)
    git("remote", "add", "origin", "https://github.com/example/fleet.git", cwd=clone)
    git("remote", "add", "fork", "git@gitlab.example.com:me/fleet", cwd=clone)
    parent = SourceConfig(name="default", url=str(clone))
    assert await clone_of("https://GitHub.com/example/fleet", parent)
    assert await clone_of("ssh://git@gitlab.example.com/me/fleet.git", parent)
    assert not await clone_of("https://github.com/example/other", parent)
    assert not await clone_of(str(tmp_path / "elsewhere"), parent)  # a local path: never
    git("remote", "set-url", "origin", "https://github.com/example/moved.git", cwd=clone)
    assert not await clone_of("https://github.com/example/fleet", parent)
    assert await clone_of("https://github.com/example/moved", parent)


async def test_a_bare_mirror_is_named_by_its_remote_and_a_remote_parent_by_nothing(
    tmp_path: Path,
) -> None:
    bare = tmp_path / "mirror.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    git("remote", "add", "origin", "https://github.com/example/fleet", cwd=bare)
    assert await clone_of("https://github.com/example/fleet", SourceConfig(name="d", url=str(bare)))
    remote = SourceConfig(name="d", url="https://github.com/example/fleet")
    assert not await clone_of("https://github.com/example/fleet", remote)
    plain = SourceConfig(name="d", url=str(tmp_path))  # no repository at all
    assert not await clone_of("https://github.com/example/fleet", plain)


async def test_a_clone_has_its_own_branches_and_tags_not_its_remotes(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git("init", "-q", "--initial-branch=main", str(clone), cwd=tmp_path)
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q",
        "--allow-empty", "-m", "one", cwd=clone)  # fmt: skip
    git("tag", "v1", cwd=clone)
    git("update-ref", "refs/remotes/origin/feature", "HEAD", cwd=clone)
    local = str(clone)
    assert await has_ref(local, GitRef(RefKind.BRANCH, "main"))
    assert await has_ref(local, GitRef(RefKind.TAG, "v1"))
    assert not await has_ref(local, GitRef(RefKind.BRANCH, "feature"))  # remote-tracking only
    assert not await has_ref(local, GitRef(RefKind.TAG, "v2"))
