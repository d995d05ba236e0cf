"""Commit trailers gitkrm reads (pure: the git command line and the parse of its output).

`Gitkrm-Allow-Prune: <n>` lifts a source's prune budget for the commit that carries it: its
sync may prune up to n objects (`gitkrm.sync.guards`)."""

from __future__ import annotations

from typing import Final

ALLOW_PRUNE: Final = "Gitkrm-Allow-Prune"


def allow_prune_args(revision: str) -> tuple[str, ...]:
    """`git log` of one commit printing the values of its `Gitkrm-Allow-Prune` trailers, as
    git itself parses trailers."""
    return (
        "log",
        "-1",
        "--no-walk",
        f"--format=%(trailers:key={ALLOW_PRUNE},valueonly)",
        "--end-of-options",
        revision,
        "--",
    )


def parse_allow_prune(text: str) -> int | None:
    """The largest non-negative integer among the trailer's values (one per line); None
    when the commit carries none (values that are not integers are ignored)."""
    found = [int(v) for v in (line.strip() for line in text.splitlines()) if v.isdigit()]
    return max(found) if found else None
