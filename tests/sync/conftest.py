"""Fixtures for the sync tests: engines, Git remotes and sources (on the real SQLite store of
tests.support.fixtures), the bundled controllers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from gitkrm.controllers import ControllerManager, ControllerOptions
from gitkrm.source import GitSource
from gitkrm.store import Store
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions
from tests.controllers.conftest import FAST
from tests.source.source_gitrepo import SourceFactory as SourceFactory
from tests.source.source_gitrepo import git_sources
from tests.support.closing import Made
from tests.sync.sync_helpers import Remote

EngineFactory = Callable[..., SyncEngine]


@pytest.fixture
async def controllers(store: Store) -> AsyncIterator[ControllerManager]:
    """The bundled controllers on the test's store, timings near zero (tests.controllers'
    FAST): Deployments become Available, Jobs run their pods to completion."""
    fields = {f: getattr(FAST, f) for f in FAST.__dataclass_fields__}
    m = ControllerManager(store=store, options=ControllerOptions(**fields))
    await m.start()
    yield m
    await m.stop()


@pytest.fixture
async def apps(store: Store, controllers: ControllerManager) -> None:
    """The bundled controllers, and the namespace `apps` made beforehand (hooks run before
    anything of the Sync phase; only a Namespace of the revision they need is made first)."""
    await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})


@pytest.fixture
async def make_engine(store: Store) -> AsyncIterator[EngineFactory]:
    """Engines on the test's store (closed afterwards); options as keywords."""
    async with Made[SyncEngine]() as made:

        def make(*, target: Store | None = None, **options: Any) -> SyncEngine:
            options.setdefault("source_name", "src")
            options.setdefault("agent_name", "agent")
            return made.keep(SyncEngine(store=target or store, options=SyncOptions(**options)))

        yield make


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path / "repo")


@pytest.fixture
async def make_source(tmp_path: Path) -> AsyncIterator[SourceFactory]:
    """Git sources named `src` unless given, caches under tmp_path; closed after the test."""
    async with git_sources(tmp_path, name="src") as make:
        yield make


@pytest.fixture
def source(remote: Remote, make_source: SourceFactory) -> GitSource:
    """The GitSource `src` of the test's remote (it reads the remote at its first snapshot)."""
    return make_source(remote.url)
