"""What a factory fixture made for one test, closed when the test ends.

A fixture that hands a test a builder (of engines, sources, reporters) keeps each thing it
builds in a `Made` and closes them all, in the order they were made, when its `async with`
ends: `close()` may be a coroutine or a plain method.
"""

from __future__ import annotations

import inspect
from typing import Generic, Protocol, TypeVar


class Closable(Protocol):
    def close(self) -> object: ...


C = TypeVar("C", bound=Closable)


class Made(Generic[C]):
    """The things made for one test (`keep` each one); closed on leaving `async with`."""

    def __init__(self) -> None:
        self._things: list[C] = []

    def keep(self, thing: C) -> C:
        self._things.append(thing)
        return thing

    async def __aenter__(self) -> Made[C]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for thing in self._things:
            closed = thing.close()
            if inspect.isawaitable(closed):
                await closed
