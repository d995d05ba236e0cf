"""GitSource status: conditions after progress, success and failures (pure functions)."""

from __future__ import annotations

from typing import Any

from gitkrm.agent import status as st
from gitkrm.krm.conditions import find_condition
from gitkrm.sync.results import COUNT_KEYS, Counts, Timings


def _cond(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    found = find_condition(status.get("conditions"), type_)
    return dict(found) if found is not None else None


OK = st.Outcome(
    revision="a" * 40,
    succeeded=True,
    reason=st.Reason.SUCCEEDED,
    counts=Counts(created=3, configured=1, unchanged=5),
    timings_ms=Timings(git=1.25, apply=3.0),
)
BAD = st.Outcome(
    revision="b" * 40,
    succeeded=False,
    reason=st.Reason.INVALID_REVISION,
    errors=("apps/x.yaml:3: Deployment a/x: bad", "apps/y.yaml:1: broken"),
    stalled=True,
)


def test_first_progress_sets_reconciling_and_unknown_ready() -> None:
    s = st.progressing({}, revision="c" * 40, generation=1, now="2025-01-01T00:00:00Z")
    assert _cond(s, "Reconciling") == {
        "type": "Reconciling",
        "status": "True",
        "reason": "Progressing",
        "message": "syncing revision cccccccccccc",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
        "observedGeneration": 1,
    }
    ready = _cond(s, "Ready")
    assert ready is not None
    assert ready["status"] == "Unknown"


def test_success_then_failure_then_success() -> None:
    s = st.finished({}, OK, generation=2, now="2025-01-01T00:00:00Z")
    assert s["lastSyncedRevision"] == "a" * 40
    assert s["result"] == "Succeeded"
    assert s["observedGeneration"] == 2
    assert s["counts"] == {  # every count of the status contract, in its order
        "created": 3,
        "configured": 1,
        "pruned": 0,
        "unchanged": 5,
        "failed": 0,
        "refused": 0,
    }
    assert list(s["counts"]) == list(COUNT_KEYS)
    ready = _cond(s, "Ready")
    assert ready is not None
    assert ready["status"] == "True"
    assert "3 created, 1 configured, 0 pruned, 5 unchanged" in ready["message"]
    assert _cond(s, "Stalled") is None
    assert _cond(s, "Reconciling") is None

    s2 = st.progressing(s, revision="b" * 40, generation=2, now="2025-01-01T00:01:00Z")
    ready2 = _cond(s2, "Ready")
    assert ready2 is not None
    assert ready2["status"] == "True"  # Ready is not flapped by a sync in progress
    s3 = st.finished(s2, BAD, generation=2, now="2025-01-01T00:02:00Z")
    assert s3["lastSyncedRevision"] == "a" * 40  # the last good revision is kept
    assert s3["lastAttemptedRevision"] == "b" * 40
    assert s3["result"] == "Failed"
    assert s3["lastError"] == "apps/x.yaml:3: Deployment a/x: bad"
    assert s3["errors"] == list(BAD.errors)
    ready3 = _cond(s3, "Ready")
    assert ready3 is not None
    assert ready3["status"] == "False"
    assert ready3["reason"] == "InvalidRevision"
    assert ready3["lastTransitionTime"] == "2025-01-01T00:02:00Z"
    assert ready3["message"].endswith("(and 1 more)")
    stalled = _cond(s3, "Stalled")
    assert stalled is not None
    assert stalled["status"] == "True"
    assert _cond(s3, "Reconciling") is None

    s4 = st.finished(s3, OK, generation=2, now="2025-01-01T00:03:00Z")
    assert "lastError" not in s4
    assert "errors" not in s4
    assert _cond(s4, "Stalled") is None
    ready4 = _cond(s4, "Ready")
    assert ready4 is not None
    assert ready4["status"] == "True"


def test_transition_time_moves_only_with_status() -> None:
    s = st.finished({}, OK, generation=1, now="2025-01-01T00:00:00Z")
    s = st.finished(s, OK, generation=1, now="2025-01-01T00:05:00Z")
    ready = _cond(s, "Ready")
    assert ready is not None
    assert ready["lastTransitionTime"] == "2025-01-01T00:00:00Z"
    assert s["lastSyncTime"] == "2025-01-01T00:05:00Z"


def test_transient_failure_is_not_stalled() -> None:
    down = st.Outcome(
        revision=None,
        succeeded=False,
        reason=st.Reason.SOURCE_FAILED,
        errors=("ls-remote: could not connect",),
    )
    s = st.finished({}, down, generation=1, now="2025-01-01T00:00:00Z", requested_at="x1")
    assert _cond(s, "Stalled") is None
    assert s["lastHandledRequestedAt"] == "x1"
    assert "lastAttemptedRevision" not in s


def test_long_messages_and_many_errors_are_clipped() -> None:
    many = st.Outcome(
        revision="c" * 40,
        succeeded=False,
        reason=st.Reason.SYNC_FAILED,
        errors=tuple("e" * 5000 for _ in range(50)),
    )
    s = st.finished({}, many, generation=1, now="2025-01-01T00:00:00Z")
    assert len(s["errors"]) == st.MAX_ERRORS
    assert all(len(e) <= st.MAX_MESSAGE for e in s["errors"])
    ready = _cond(s, "Ready")
    assert ready is not None
    assert len(ready["message"]) <= st.MAX_MESSAGE
