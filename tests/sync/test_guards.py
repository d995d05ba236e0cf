"""The guards' verdicts (pure): the prune budget's limit, the trailer's approval, the
empty-revision guard."""

from __future__ import annotations

import pytest

from gitkrm.errors import BadRequest
from gitkrm.krm import ObjectRef
from gitkrm.sync.guards import Guard, PruneBudget, check_empty, check_prune_budget
from gitkrm.sync.steps import Op, Step

REV = "0123456789abcdef0123456789abcdef01234567"


def _prunes(n: int) -> tuple[Step, ...]:
    ref = ObjectRef(group="", kind="ConfigMap", name="x", namespace="default")
    kept = Step(Op.UNCHANGED, ref, "default_x__ConfigMap")
    return (kept, *(Step(Op.PRUNE, ref, f"default_p{i}__ConfigMap") for i in range(n)))


@pytest.mark.parametrize(
    ("inventory", "limit"), [(0, 10), (12, 10), (40, 10), (44, 11), (10_020, 2_505)]
)
def test_the_default_budget_is_ten_objects_or_a_quarter(inventory: int, limit: int) -> None:
    assert PruneBudget().limit(inventory) == limit


def test_more_than_the_budget_is_refused_unless_the_trailer_covers_it() -> None:
    budget = PruneBudget(count=2, percent=0)
    assert check_prune_budget(
        revision=REV, steps=_prunes(2), inventory=50, budget=budget, allowed=None
    ) is None  # fmt: skip
    refused = check_prune_budget(
        revision=REV, steps=_prunes(3), inventory=50, budget=budget, allowed=None
    )
    assert refused is not None
    assert refused.guard is Guard.PRUNE_BUDGET
    assert refused.message.startswith("revision 0123456789ab would prune 3 of the 50 objects")
    assert "'Gitkrm-Allow-Prune: 3'" in refused.message
    assert check_prune_budget(
        revision=REV, steps=_prunes(3), inventory=50, budget=budget, allowed=3
    ) is None  # fmt: skip
    short = check_prune_budget(revision=REV, steps=_prunes(3), inventory=50, budget=budget,
                               allowed=2)  # fmt: skip
    assert short is not None
    assert "trailer approves only 2" in short.message


def test_percent_100_turns_the_budget_off() -> None:
    off = PruneBudget(count=0, percent=100)
    assert check_prune_budget(
        revision=REV, steps=_prunes(50), inventory=51, budget=off, allowed=None
    ) is None  # fmt: skip


@pytest.mark.parametrize(("count", "percent"), [(-1, 25), (10, 101), (10, -5)])
def test_a_bad_budget_is_refused(count: int, percent: int) -> None:
    with pytest.raises(BadRequest, match="pruneBudget"):
        PruneBudget(count=count, percent=percent)


def test_the_empty_revision_guard() -> None:
    refused = check_empty(revision=REV, objects=0, inventory=3, allow_empty=False)
    assert refused is not None
    assert refused.guard is Guard.EMPTY_REVISION
    assert check_empty(revision=REV, objects=0, inventory=3, allow_empty=True) is None
    assert check_empty(revision=REV, objects=1, inventory=3, allow_empty=False) is None
    assert check_empty(revision=REV, objects=0, inventory=0, allow_empty=False) is None
