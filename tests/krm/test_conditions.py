from __future__ import annotations

from gitkrm.krm.conditions import (
    conditions_of,
    find_condition,
    get_condition,
    remove_condition,
    set_condition,
)


def test_transition_time_moves_only_with_the_status() -> None:
    first = set_condition([], "Ready", "False", "Waiting", "w", now="t1")
    assert first == [
        {
            "type": "Ready",
            "status": "False",
            "lastTransitionTime": "t1",
            "reason": "Waiting",
            "message": "w",
        }
    ]
    same = set_condition(first, "Ready", "False", "Still", "s", now="t2")
    assert same[0]["lastTransitionTime"] == "t1"
    assert same[0]["reason"] == "Still"
    flipped = set_condition(same, "Ready", "True", "Done", "d", now="t3")
    assert flipped[0]["lastTransitionTime"] == "t3"
    assert first[0]["reason"] == "Waiting", "the input is not changed"


def test_update_time_and_extra_fields() -> None:
    c = set_condition([], "Progressing", "True", "A", "a", now="t1", update_time=True)
    assert c[0]["lastUpdateTime"] == "t1"
    c = set_condition(c, "Progressing", "True", "B", "b", now="t2", update_time=True)
    assert (c[0]["lastUpdateTime"], c[0]["lastTransitionTime"]) == ("t2", "t1")
    c = set_condition(c, "Ready", "True", "R", "r", now="t3", extra={"observedGeneration": 4})
    assert c[1]["observedGeneration"] == 4


def test_read_and_remove() -> None:
    obj = {"status": {"conditions": [{"type": "A", "status": "True"}, "junk"]}}
    assert conditions_of(obj) == [{"type": "A", "status": "True"}]
    assert get_condition(obj, "A") == {"type": "A", "status": "True"}
    assert get_condition({"status": None}, "A") is None
    assert find_condition(None, "A") is None
    assert remove_condition(conditions_of(obj), "A") == []
