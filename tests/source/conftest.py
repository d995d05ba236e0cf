from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gitkrm.source import GitSource, GitSourceSpec
from tests.source.source_gitrepo import RemoteRepo, SourceFactory


@pytest.fixture
def remote(tmp_path: Path) -> RemoteRepo:
    return RemoteRepo(tmp_path / "repo")


@pytest.fixture
async def make_source(tmp_path: Path) -> AsyncIterator[SourceFactory]:
    """Build Git sources with their caches under tmp_path; all closed after the test."""
    made: list[GitSource] = []

    def make(url: str, *, cache: str = "cache", **spec: Any) -> GitSource:
        spec.setdefault("name", "test")
        src = GitSource(GitSourceSpec(url=url, **spec), cache_dir=tmp_path / cache)
        made.append(src)
        return src

    yield make
    for src in made:
        await src.close()
