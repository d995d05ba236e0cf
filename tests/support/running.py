"""A server or process a test runs in a `with` block: stopped when the block ends, even failing."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Running:
    """Entering calls `start` (by default nothing: the constructor started it); leaving, `stop`.

    `start` cleans up after itself when it fails: `__exit__` does not run then.
    """

    def start(self) -> None:
        """Start what the constructor did not (by default there is nothing more to start)."""

    def stop(self) -> object:
        """Stop it and release what it holds; safe to call when it is not running."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
