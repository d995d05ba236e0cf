"""Fixtures of the agent tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gitkrm.agent.agent import Agent


@pytest.fixture
async def agents() -> AsyncIterator[list[Agent]]:
    """Agents made by a test (it appends them); all closed afterwards."""
    made: list[Agent] = []
    yield made
    for a in made:
        await a.close()
