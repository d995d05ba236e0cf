"""Source errors that name the revision they refuse, so a caller can report and skip it.

They are `gitkrm.errors` classes (same reason and code); the subclass only adds `revision`.
"""

from __future__ import annotations

from collections.abc import Sequence

from gitkrm.errors import Cause, Forbidden, Invalid, NotFound


class InvalidRevision(Invalid):
    """A revision with files that can't be used (symlink escapes, huge files); one cause each."""

    def __init__(self, *, revision: str, causes: Sequence[Cause]) -> None:
        body = "; ".join(str(c) for c in causes)
        super().__init__(
            f"revision {revision[:12]} has {len(causes)} invalid file(s): {body}", causes=causes
        )
        self.revision = revision


class UntrustedRevision(Forbidden):
    """A head commit whose signature is missing or not made by a key of the keyring."""

    def __init__(self, *, revision: str, reason: str) -> None:
        super().__init__(f"commit {revision} refused: {reason}")
        self.revision = revision


class PathNotFound(NotFound):
    """The source's sub-path is absent from a revision (or is a file there)."""

    def __init__(self, *, revision: str, path: str, what: str = "does not exist") -> None:
        super().__init__(f"path {path!r} {what} in revision {revision[:12]}")
        self.revision = revision


RevisionError = InvalidRevision | UntrustedRevision | PathNotFound
"""Errors that depend only on a revision's content: they stay true until the ref moves."""
