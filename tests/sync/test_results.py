"""A sync's result: typed counts and timings that also read as the mappings documents use."""

from __future__ import annotations

import pytest

from gitkrm.krm import ObjectRef
from gitkrm.sync.results import Action, Counts, ObjectResult, SyncStatus, Timings, make_result

REF = ObjectRef(group="", kind="ConfigMap", name="a", namespace="default")


def test_counts_are_typed_and_read_as_a_mapping() -> None:
    result = make_result(
        revision="r",
        objects=[ObjectResult(REF, Action.CREATED), ObjectResult(REF, Action.REFUSED)],
    )
    assert result.counts.created == 1
    assert result.counts.bad == 1
    assert result.counts.changed
    assert result.status is SyncStatus.FAILED
    assert result.counts["refused"] == 1
    assert dict(result.counts) == {
        "created": 1,
        "configured": 0,
        "pruned": 0,
        "unchanged": 0,
        "failed": 0,
        "refused": 1,
        "skipped": 0,
    }
    assert result.counts == dict(result.counts)
    with pytest.raises(KeyError):
        result.counts["nope"]
    assert Counts.from_mapping({"created": 2, "failed": "x", "other": 3}) == Counts(created=2)


def test_timings_are_rounded_phases() -> None:
    t = Timings.of({"git": 1.23456, "apply": 2, "other": 5})
    assert (t.git, t.apply, t.render) == (1.235, 2.0, 0.0)
    assert t.total == pytest.approx(3.235)
    assert dict(t) == {"git": 1.235, "render": 0.0, "diff": 0.0, "apply": 2.0}
    assert make_result(revision="r").timings_ms == Timings()
