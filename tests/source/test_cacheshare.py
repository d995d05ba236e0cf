"""Sources of one repository URL and credentials share one cache (`share`): a commit is
fetched once for all of them, each still sees its own ref and path; other credentials keep
a cache of their own; a repair by one is seen by the others. Real bare repositories."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from gitkrm.source import GitRef, GitSource, GitSourceSpec, RefKind
from tests.source.source_gitrepo import RemoteRepo, git
from tests.support.closing import Made

N = 6
Make = Callable[..., GitSource]


@pytest.fixture
async def shared(tmp_path: Path) -> AsyncIterator[Make]:
    """Sources named by the caller, their own caches and the shared ones under git/."""
    async with Made[GitSource]() as made:

        def make(url: str, name: str, **spec: Any) -> GitSource:
            root = tmp_path / "git"
            spec = {"name": name, "url": url, **spec}
            return made.keep(GitSource(GitSourceSpec(**spec), cache_dir=root / name, share=root))

        yield make


def layout(remote: RemoteRepo, value: str) -> str:
    for i in range(N):
        remote.write(f"app-{i}/cm.yaml", f"kind: ConfigMap\nname: app-{i}\nv: '{value}'\n")
    return remote.publish(value)


def fetches(sources: list[GitSource]) -> int:
    return sum(s.git.calls["fetch"] for s in sources)


async def test_children_of_one_repository_fetch_it_once(remote: RemoteRepo, shared: Make) -> None:
    first = layout(remote, "1")
    sources = [shared(remote.url, f"child-{i}", path=f"app-{i}") for i in range(N)]
    assert len({s.cache_dir for s in sources}) == 1
    for i, src in enumerate(sources):
        snap = await src.snapshot()
        assert (snap.revision, sorted(snap.files)) == (first, ["cm.yaml"])
        assert snap.read("cm.yaml") == f"kind: ConfigMap\nname: app-{i}\nv: '1'\n".encode()
    assert fetches(sources) == 1  # not one per child
    assert sum(s.git.calls["init"] for s in sources) == 1

    # A new commit: fetched once again, every child at it, each its own path.
    second = layout(remote, "2")
    for src in sources:
        snap = await src.snapshot()
        assert snap.revision == second
        assert snap.read("cm.yaml").endswith(b"v: '2'\n")
    assert fetches(sources) == 2

    # Another ref of the same repository: its own fetch, into the same cache.
    git("checkout", "-q", "-b", "prod", first, cwd=remote.work)
    remote.push("HEAD:refs/heads/prod")
    prod = shared(remote.url, "prod", path="app-0", ref=GitRef(RefKind.BRANCH, "prod"))
    assert prod.cache_dir == sources[0].cache_dir
    assert (await prod.snapshot()).revision == first  # already in the cache: no fetch
    assert fetches([*sources, prod]) == 2
    assert (await sources[0].snapshot()).revision == second  # each keeps its own ref


async def test_other_credentials_keep_their_own_cache(
    remote: RemoteRepo, shared: Make, tmp_path: Path
) -> None:
    layout(remote, "1")
    ca = tmp_path / "ca.crt"
    ca.write_text("not used by a local remote\n")
    plain = shared(remote.url, "plain")
    other = shared(remote.url, "with-ca", ca_file=ca)
    same = shared(remote.url, "plain-too")
    assert plain.cache_dir == same.cache_dir != other.cache_dir
    assert other.cache_dir == tmp_path / "git" / "with-ca"
    for src in (plain, other, same):
        await src.snapshot()
    assert [s.git.calls["fetch"] for s in (plain, other, same)] == [1, 1, 0]


async def test_a_cache_repaired_by_one_source_serves_the_others(
    remote: RemoteRepo, shared: Make
) -> None:
    sha = layout(remote, "1")
    a, b = shared(remote.url, "a", path="app-0"), shared(remote.url, "b", path="app-1")
    await a.snapshot()
    await b.snapshot()
    shutil.rmtree(a.cache_dir / "objects")  # damaged under both
    a._damaged = True  # as a failed read would flag it
    assert (await a.snapshot()).read("cm.yaml").endswith(b"v: '1'\n")
    second = layout(remote, "2")
    snap = await b.snapshot()  # no second wipe: b reads the cache a made again
    assert (snap.revision, snap.read("cm.yaml")) == (
        second, b"kind: ConfigMap\nname: app-1\nv: '2'\n"
    )  # fmt: skip
    assert sum(s.git.calls["init"] for s in (a, b)) == 2  # the first clone and a's repair
    assert sha != second
