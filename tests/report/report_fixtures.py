"""Fixtures of the report tests (imported by tests/report/conftest.py and the e2e tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from gitkrm.report import Backoff, Reporter
from gitkrm.report.repo import RemoteTarget, ReportRepo
from gitkrm.source import GitSource, GitSourceSpec
from tests.report.report_helpers import make_history
from tests.source.source_gitrepo import RemoteRepo
from tests.support.closing import Made

SourceMaker = Callable[..., Awaitable[GitSource]]
ReporterMaker = Callable[..., Reporter]
RepoMaker = Callable[..., ReportRepo]
AgentRepoMaker = Callable[..., Awaitable[ReportRepo]]


@pytest.fixture
def remote(tmp_path: Path) -> RemoteRepo:
    """A bare remote with one commit of one manifest on main."""
    r = RemoteRepo(tmp_path / "repo")
    r.publish("first", {"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"})
    return r


@pytest.fixture
async def make_source(tmp_path: Path) -> AsyncIterator[SourceMaker]:
    """Git sources whose caches live in `<state>/git/<name>`, each snapshotted once."""
    async with Made[GitSource]() as made:

        async def make(
            url: str, *, name: str = "default", state: str = "state", **spec: Any
        ) -> GitSource:
            cache = tmp_path / state / "git" / name
            src = made.keep(GitSource(GitSourceSpec(name=name, url=url, **spec), cache_dir=cache))
            await src.snapshot()
            return src

        yield make


@pytest.fixture
async def make_repo() -> AsyncIterator[RepoMaker]:
    """Report repositories, each closed (its `git cat-file` ended) when the test ends."""
    async with Made[ReportRepo]() as made:

        def make(target: RemoteTarget, *, agent: str = "edge-1") -> ReportRepo:
            return made.keep(ReportRepo(target, agent=agent))

        yield make


@pytest.fixture
def agent_repo(
    make_source: SourceMaker, make_repo: RepoMaker, remote: RemoteRepo
) -> AgentRepoMaker:
    """The report repository of an agent (edge-1 unless named) on the test's remote, made
    from a source snapshotted in the state directory `state` (unless named)."""

    async def make(agent: str = "edge-1", *, state: str = "state") -> ReportRepo:
        src = await make_source(remote.url, state=state)
        return make_repo(RemoteTarget.of_source(src), agent=agent)

    return make


FAST = Backoff(initial=0.05, maximum=0.2, jitter=0.0)


@pytest.fixture
async def make_reporter() -> AsyncIterator[ReporterMaker]:
    async with Made[Reporter]() as made:

        def make(agent: str = "edge-1", *, throttle_s: float = 0.0, **kw: Any) -> Reporter:
            kw.setdefault("backoff", FAST)
            return made.keep(Reporter(agent_name=agent, throttle_s=throttle_s, **kw))

        yield make


@pytest.fixture
async def history(
    make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo
) -> list[str]:
    """The remote's commits first, second and third, noted by syncs of two agents
    (`report_helpers.make_history`)."""
    return await make_history(make_source, make_reporter, remote)


async def reporting(
    make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo, **options: Any
) -> tuple[GitSource, Reporter]:
    """A reporter (`make_reporter(**options)`) with the remote's GitSource as source `default`."""
    src = await make_source(remote.url)
    rep = make_reporter(**options)
    rep.register("default", src)
    return src, rep
