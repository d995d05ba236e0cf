"""The agent's GitSource objects at start: unconfigured sources dropped, the children of
configured ones (source trees) kept, those of a dropped source dropped with it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gitkrm.agent import crd, gitsources
from gitkrm.agent.config import SourceConfig
from gitkrm.store import Store, open_store


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    s = await open_store("sqlite:///:memory:")
    await crd.install(s)
    yield s
    await s.close()


async def names(store: Store) -> set[str]:
    listed = await store.list(crd.GITSOURCE_GVK, crd.NAMESPACE)
    return {o["metadata"]["name"] for o in listed["items"]}


async def test_children_go_with_their_configured_ancestor(store: Store) -> None:
    def source(name: str) -> SourceConfig:
        return SourceConfig(name=name, url="https://git.example.com/r.git")

    for name, parent in (
        ("kept", None), ("gone", None), ("kept-child", "kept"),
        ("kept-grandchild", "kept-child"), ("gone-child", "gone"),
    ):  # fmt: skip
        await gitsources.ensure(store, source(name), agent_name="a", parent=parent)
    await gitsources.ensure(store, source("other-agent"), agent_name="b")
    await gitsources.forget_unconfigured(store, agent_name="a", wanted={"kept"})
    assert await names(store) == {"kept", "kept-child", "kept-grandchild", "other-agent"}
