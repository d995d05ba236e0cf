from __future__ import annotations

from pathlib import Path

import pytest

from tests.source.source_gitrepo import RemoteRepo


@pytest.fixture
def repo(tmp_path: Path) -> RemoteRepo:
    """A bare repository on disk (`repo.url`) and a work clone that commits and pushes."""
    return RemoteRepo(tmp_path / "repo")


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"
