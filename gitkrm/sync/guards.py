"""The guards that refuse a whole revision before anything is written (pure).

- The empty-revision guard: a revision that renders no object while the inventory holds
  some would prune everything; refused unless the source allows empty revisions.
- The prune budget (GitSource `spec.pruneBudget`): a revision that would prune more than
  `count` objects *and* more than `percent` % of the inventory is refused, unless its
  commit carries the trailer `Gitkrm-Allow-Prune: <n>` with n at least the number of
  prunes. Routine changes (a few objects, or a small share of a large source) pass; a
  mistyped path, an emptied kustomization or a dropped chart that deletes an application
  is stopped and waits for a human to say so in Git.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gitkrm.source.trailers import ALLOW_PRUNE as ALLOW_PRUNE_TRAILER
from gitkrm.sync.options import DEFAULT_PRUNE_BUDGET, PruneBudget
from gitkrm.sync.steps import Op, Step

__all__ = ["DEFAULT_PRUNE_BUDGET", "Guard", "PruneBudget", "Verdict", "check_empty",
           "check_prune_budget", "prunes"]  # fmt: skip


class Guard(StrEnum):
    """Which guard refused a revision (the GitSource status reason and `plan` exit 3)."""

    EMPTY_REVISION = "EmptyRevision"
    PRUNE_BUDGET = "PruneBudgetExceeded"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A guard's refusal: which guard and why (one line, naming the way out)."""

    guard: Guard
    message: str


def prunes(steps: tuple[Step, ...]) -> int:
    return sum(1 for s in steps if s.op is Op.PRUNE)


def check_prune_budget(
    *,
    revision: str,
    steps: tuple[Step, ...],
    inventory: int,
    budget: PruneBudget,
    allowed: int | None,
) -> Verdict | None:
    """The prune budget's verdict on a plan (None: within budget, or approved by the
    commit's trailer)."""
    n = prunes(steps)
    limit = budget.limit(inventory)
    if n <= limit or (allowed is not None and allowed >= n):
        return None
    approved = (
        f" (its {ALLOW_PRUNE_TRAILER} trailer approves only {allowed})"
        if allowed is not None
        else ""
    )
    return Verdict(
        Guard.PRUNE_BUDGET,
        f"revision {revision[:12]} would prune {n} of the {inventory} objects of the "
        f"inventory, more than the prune budget allows ({budget.count} objects or "
        f"{budget.percent}% of the inventory: {limit}){approved}: refused; to prune them, "
        f"commit with the trailer '{ALLOW_PRUNE_TRAILER}: {n}' or raise spec.pruneBudget",
    )


def check_empty(
    *, revision: str, objects: int, inventory: int, allow_empty: bool
) -> Verdict | None:
    """The empty-revision guard's verdict."""
    if objects or not inventory or allow_empty:
        return None
    return Verdict(
        Guard.EMPTY_REVISION,
        f"revision {revision[:12]} renders no objects while the inventory holds {inventory}: "
        "refusing to prune everything (allow empty revisions for this source to do it)",
    )
