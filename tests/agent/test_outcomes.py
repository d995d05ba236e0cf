"""How a sync result or an error becomes the status outcome (`gitkrm.agent.outcomes`)."""

from __future__ import annotations

from gitkrm.agent.outcomes import outcome_of, outcome_of_error
from gitkrm.agent.status import Reason
from gitkrm.errors import Cause, NotFound
from gitkrm.krm import ObjectRef
from gitkrm.source import InvalidRevision
from gitkrm.sync.results import Action, ObjectResult, make_result

REV = "a" * 40


def _obj(name: str, action: Action, message: str = "") -> ObjectResult:
    ref = ObjectRef(group="", kind="ConfigMap", name=name, namespace="default")
    return ObjectResult(ref=ref, action=action, message=message, path="x.yaml", line=3)


def test_success() -> None:
    o = outcome_of(make_result(revision=REV, objects=[_obj("a", Action.CREATED)]))
    assert o.succeeded
    assert o.reason is Reason.SUCCEEDED
    assert o.counts is not None
    assert o.counts.created == 1
    assert not o.stalled


def test_a_refused_object_fails_the_sync_but_does_not_stall_it() -> None:
    result = make_result(
        revision=REV,
        objects=[_obj("a", Action.CREATED), _obj("b", Action.REFUSED, "owned by someone")],
    )
    o = outcome_of(result)
    assert not o.succeeded
    assert o.reason is Reason.SYNC_FAILED
    assert not o.stalled
    assert o.errors == ("x.yaml:3: ConfigMap default/b refused: owned by someone",)


def test_a_refused_revision_stalls() -> None:
    o = outcome_of(make_result(revision=REV, errors=["a.yaml:1: bad"]))
    assert not o.succeeded
    assert o.stalled
    assert o.reason is Reason.INVALID_REVISION
    assert o.errors == ("a.yaml:1: bad",)


def test_source_errors() -> None:
    bad = InvalidRevision(
        revision=REV, causes=[Cause(type="FieldValueInvalid", field="x.yaml", message="huge")]
    )
    o = outcome_of_error(bad, revision=None)
    assert o.stalled
    assert o.revision == REV
    assert o.reason is Reason.INVALID_REVISION
    gone = outcome_of_error(NotFound("branch 'main' not found"), revision=None)
    assert not gone.stalled
    assert gone.reason is Reason.SOURCE_FAILED
    assert gone.errors == ("branch 'main' not found",)
