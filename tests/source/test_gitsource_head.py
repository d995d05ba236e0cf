"""A remote whose default branch is not `main` (kubernetes/examples is on `master`): the
default `main` fails naming the branch to give, and `--ref HEAD` follows whichever branch
the remote's HEAD names, moving with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.errors import BadRequest, NotFound
from gitkrm.source import GitRef, RefKind
from tests.source.source_gitrepo import RemoteRepo, SourceFactory, git


@pytest.fixture
def master(tmp_path: Path) -> RemoteRepo:
    repo = RemoteRepo(tmp_path / "master-repo", branch="master")
    repo.publish("on master", {"cm.yaml": "kind: ConfigMap\n"})
    return repo


async def test_the_default_branch_is_named_when_main_is_missing(
    master: RemoteRepo, make_source: SourceFactory
) -> None:
    src = make_source(master.url)  # tracks branch main, the default
    with pytest.raises(NotFound) as err:
        await src.poll()
    assert "branch 'main' not found" in err.value.message
    assert "its default branch is 'master' (--branch master, or --ref HEAD" in err.value.message


async def test_head_follows_the_remotes_default_branch(
    master: RemoteRepo, make_source: SourceFactory
) -> None:
    src = make_source(master.url, ref=GitRef(RefKind.REF, "HEAD"))
    first = git("rev-parse", "HEAD", cwd=master.work)
    assert await src.poll() == first
    assert (await src.snapshot()).revision == first
    # the remote's HEAD moves to another branch: the source follows it
    git("checkout", "-q", "-b", "trunk", cwd=master.work)
    master.write("cm.yaml", "kind: ConfigMap\nmetadata: {name: trunk}\n")
    trunk = master.commit("on trunk")
    master.push("HEAD:refs/heads/trunk")
    git("symbolic-ref", "HEAD", "refs/heads/trunk", cwd=master.bare)
    assert await src.poll() == trunk
    assert (await src.snapshot()).revision == trunk


def test_a_ref_is_a_full_name_or_head() -> None:
    with pytest.raises(BadRequest, match=r"full ref name \(refs/\.\.\.\) or HEAD"):
        GitRef(RefKind.REF, "main")
