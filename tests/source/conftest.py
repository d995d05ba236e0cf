from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.source.source_gitrepo import RemoteRepo, SourceFactory, git_sources


@pytest.fixture
def remote(tmp_path: Path) -> RemoteRepo:
    return RemoteRepo(tmp_path / "repo")


@pytest.fixture
async def make_source(tmp_path: Path) -> AsyncIterator[SourceFactory]:
    """Build Git sources with their caches under tmp_path; all closed after the test."""
    async with git_sources(tmp_path, name="test") as make:
        yield make
