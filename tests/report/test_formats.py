from __future__ import annotations

import datetime as dt

import pytest
import yaml

from gitkrm.errors import Invalid
from gitkrm.health import Health, HealthResult
from gitkrm.report import validate_note, validate_status
from gitkrm.report.formats import (
    MAX_ERRORS,
    NOTE_KIND,
    SourceInfo,
    SourceReport,
    entry_applied,
    entry_health,
    key_of,
    merge_notes,
    note_document,
    note_entry,
    parse,
    render,
    status_document,
    status_entry,
)
from gitkrm.source.redact import Redactor
from gitkrm.sync.results import Action, ObjectResult, SyncStatus, make_result
from tests.report.report_helpers import CURRENT, DEADLINE, PROGRESSING, deployment

SHA = "a" * 40
T0 = dt.datetime(2024, 5, 1, 10, 0, 0, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(seconds=30)
INFO = SourceInfo(name="default", url="https://git.example/repo.git", ref="branch main", path="")


def _report(**health: HealthResult) -> SourceReport:
    refs = {name: deployment(name) for name in health}
    res = make_result(
        revision=SHA, objects=[ObjectResult(r, Action.CREATED) for r in refs.values()]
    )
    return SourceReport.of_sync(
        source=INFO, result=res, health={refs[n]: h for n, h in health.items()}, now=T0
    )


def test_a_sync_report_has_counts_aggregate_and_every_kept_object() -> None:
    web, db, old = deployment("web"), deployment("db"), deployment("old")
    versioned = deployment("web").__class__(
        group="apps", kind="Deployment", name="api", namespace="default", version="v1"
    )
    res = make_result(
        revision=SHA,
        objects=[
            ObjectResult(web, Action.CREATED),
            ObjectResult(db, Action.UNCHANGED),
            ObjectResult(old, Action.PRUNED),
            ObjectResult(versioned, Action.CONFIGURED),
        ],
    )
    rep = SourceReport.of_sync(source=INFO, result=res, health={web: CURRENT}, now=T0)
    assert rep.counts.shown() == {
        "created": 1,
        "configured": 1,
        "pruned": 1,
        "unchanged": 1,
        "failed": 0,
        "refused": 0,
    }
    assert set(rep.health) == {key_of(web), key_of(db), key_of(versioned)}  # the pruned one is gone
    assert (rep.verdict(db) or CURRENT).status is Health.UNKNOWN  # no verdict given: not observed
    assert rep.aggregate is Health.UNKNOWN
    assert rep.result is SyncStatus.SUCCEEDED


def test_errors_are_redacted_clipped_and_capped() -> None:
    redactor = Redactor(["tok-123456"])
    failed = ObjectResult(deployment("web"), Action.FAILED, "denied for tok-123456", "a.yaml", 3)
    errors = ["fetch https://user:tok-123456@host/x failed", "x" * 5000] + [
        f"e{i}" for i in range(200)
    ]
    res = make_result(revision=SHA, objects=[failed], errors=errors)
    rep = SourceReport.of_sync(source=INFO, result=res, health={}, now=T0, redact=redactor)
    assert rep.result is SyncStatus.FAILED
    assert len(rep.errors) == MAX_ERRORS
    assert rep.errors[0] == "fetch https://***@host/x failed"
    assert len(rep.errors[1]) == 1024
    assert rep.errors[1].endswith("...")
    assert rep.errors[-1] == "... and 104 more"  # 203 problems, 99 shown
    assert all("tok-123456" not in e for e in rep.errors)


def test_failed_objects_are_errors_with_their_file_and_line() -> None:
    failed = ObjectResult(deployment("web"), Action.REFUSED, "owned by source other", "a.yaml", 7)
    rep = SourceReport.of_sync(
        source=INFO, result=make_result(revision=SHA, objects=[failed]), health={}, now=T0
    )
    assert rep.errors == ("a.yaml:7: Deployment.apps default/web refused: owned by source other",)


def test_health_changes_make_a_new_report_only_when_a_verdict_changes() -> None:
    rep = _report(web=PROGRESSING, db=CURRENT)
    assert rep.with_health({deployment("web"): PROGRESSING}, now=T1) is None
    later = rep.with_health({deployment("web"): DEADLINE}, now=T1)
    assert later is not None
    assert later.aggregate is Health.FAILED
    assert later.synced_at == T0
    assert later.updated_at == T1
    assert later.verdict(deployment("db")) == CURRENT
    assert rep.verdict(deployment("web")) == PROGRESSING  # the old report is untouched


def test_note_lists_objects_not_current_and_status_lists_all() -> None:
    rep = _report(web=DEADLINE, db=CURRENT, api=PROGRESSING)
    note = note_entry(rep)
    assert [o["name"] for o in note["objects"]] == ["api", "web"]
    assert note["objects"][1] == {
        "group": "apps",
        "kind": "Deployment",
        "namespace": "default",
        "name": "web",
        "health": "Failed",
        "reason": "ProgressDeadlineExceeded",
        "message": "Progress deadline exceeded",
    }
    assert note["health"] == "Failed"
    assert note["result"] == "Succeeded"
    assert note["time"] == "2024-05-01T10:00:00Z"
    status = status_entry(rep)
    assert [o["name"] for o in status["objects"]] == ["api", "db", "web"]
    assert status["objects"][1] == {
        "group": "apps",
        "kind": "Deployment",
        "namespace": "default",
        "name": "db",
        "health": "Current",
    }
    assert (status["url"], status["ref"], status["path"]) == (INFO.url, "branch main", "")
    validate_note(note_document("edge-1", {"default": note}))
    validate_status(status_document("edge-1", {"default": status}, updated=T1))


def test_health_messages_are_redacted() -> None:
    rep = _report(web=HealthResult(Health.FAILED, "pull from https://u:pw-99999@reg/x", "Err"))
    note = note_entry(rep, redact=Redactor(["pw-99999"]))
    assert note["objects"][0]["message"] == "pull from https://***@reg/x"


def test_cluster_scoped_objects_have_no_namespace() -> None:
    ns = deployment("x").__class__(group="", kind="Namespace", name="team-a")
    res = make_result(revision=SHA, objects=[ObjectResult(ns, Action.CREATED)])
    rep = SourceReport.of_sync(source=INFO, result=res, health={ns: PROGRESSING}, now=T0)
    assert "namespace" not in note_entry(rep)["objects"][0]


def test_rendered_documents_read_back_equal_and_valid() -> None:
    rep = _report(web=DEADLINE, db=CURRENT)
    note = note_document("edge-1", {"default": note_entry(rep), "other": note_entry(rep)})
    data = render(note)
    assert data.startswith(b"# gitkrm SyncNote of agent edge-1")
    assert parse(data, kind=NOTE_KIND, what="n") == note
    assert yaml.safe_load(data) == note
    validate_note(yaml.safe_load(data))
    status = status_document("edge-1", {"default": status_entry(rep)}, updated=T1)
    validate_status(yaml.safe_load(render(status)))


@pytest.mark.parametrize(
    "data", [b"[1, 2]", b"kind: SyncNote\n", b"a: [", b"kind: AgentStatus\nsources: {}\n"]
)
def test_parse_refuses_what_is_not_a_note(data: bytes) -> None:
    with pytest.raises(Invalid, match="note of x"):
        parse(data, kind=NOTE_KIND, what="note of x")


def test_merge_keeps_every_source_and_the_newest_entry_of_each() -> None:
    old = {"updated": "2024-05-01T10:00:00Z", "v": "old"}
    new = {"updated": "2024-05-01T10:00:05Z", "v": "new"}
    base = note_document("a", {"s1": new, "s2": old})
    ours = note_document("a", {"s1": old, "s3": old, "s2": {**old, "v": "ours"}})
    merged = merge_notes(base, ours)
    assert merged["sources"] == {"s1": new, "s2": {**old, "v": "ours"}, "s3": old}
    assert list(merged["sources"]) == ["s1", "s2", "s3"]
    assert merge_notes({}, ours)["sources"] == ours["sources"]


def test_objects_the_sync_failed_or_refused_are_failed_whatever_their_live_health() -> None:
    web, db, taken = deployment("web"), deployment("db"), deployment("taken")
    res = make_result(
        revision=SHA,
        objects=[
            ObjectResult(web, Action.CREATED),
            ObjectResult(db, Action.FAILED, "spec.selector: field is immutable", "db.yaml", 1),
            ObjectResult(taken, Action.REFUSED, "owned by source other", "t.yaml", 1),
        ],
    )
    # What a look at the store says: db is the previous revision's, taken someone else's.
    live = {web: CURRENT, db: CURRENT, taken: CURRENT}
    rep = SourceReport.of_sync(source=INFO, result=res, health=live, now=T0)
    assert rep.aggregate is Health.FAILED
    assert rep.verdict(db) == HealthResult(
        Health.FAILED, "spec.selector: field is immutable", "SyncFailed"
    )
    assert rep.verdict(taken) == HealthResult(Health.FAILED, "owned by source other", "SyncRefused")
    note = note_entry(rep)
    assert [(o["name"], o["health"], o["reason"]) for o in note["objects"]] == [
        ("db", "Failed", "SyncFailed"),
        ("taken", "Failed", "SyncRefused"),
    ]
    assert note["health"] == "Failed"
    validate_note(note_document("edge-1", {"default": note}))
    # The health follower's later word on the live objects does not undo the sync's.
    assert rep.with_health({taken: CURRENT, db: CURRENT}, now=T1) is None
    later = rep.with_health({web: PROGRESSING, taken: CURRENT}, now=T1)
    assert later is not None
    assert later.verdict(taken) == rep.verdict(taken)
    assert later.verdict(web) == PROGRESSING
    assert later.aggregate is Health.FAILED


def test_a_revision_refused_outright_is_unknown_not_current() -> None:
    res = make_result(revision=SHA, errors=["bad.yaml:1: ConfigMap default/b: unknown field"])
    rep = SourceReport.of_sync(source=INFO, result=res, health={}, now=T0)
    assert (rep.result, rep.aggregate, rep.applied) == (SyncStatus.FAILED, Health.UNKNOWN, False)
    note, status = note_entry(rep), status_entry(rep)
    assert (note["health"], note["objects"], status["health"], status["objects"]) == (
        "Unknown",
        [],
        "Unknown",
        [],
    )
    assert not entry_applied(note)
    validate_note(note_document("edge-1", {"default": note}))
    validate_status(status_document("edge-1", {"default": status}, updated=T1))
    # A revision with no objects that was applied (an allowed empty one) is Current.
    empty = SourceReport.of_sync(source=INFO, result=make_result(revision=SHA), health={}, now=T0)
    assert (empty.aggregate, empty.applied) == (Health.CURRENT, True)
    assert entry_applied(note_entry(empty))


@pytest.mark.parametrize(
    ("entry", "health"),
    [
        # Written before failed syncs were judged: read truthfully.
        (
            {"result": "Failed", "health": "Current", "counts": {"created": 0}, "objects": []},
            "Unknown",
        ),
        (
            {"result": "Failed", "health": "Current", "counts": {"refused": 1}, "objects": []},
            "Failed",
        ),
        (
            {"result": "Failed", "health": "Current", "counts": {"failed": 2, "created": 1}},
            "Failed",
        ),
        # As they say.
        ({"result": "Failed", "health": "Current", "counts": {"unchanged": 3}}, "Current"),
        ({"result": "Succeeded", "health": "Current", "counts": {}, "objects": []}, "Current"),
        ({"result": "Failed", "health": "InProgress", "counts": {"created": 1}}, "InProgress"),
        ({"result": "Failed", "health": "Unknown", "counts": {}, "objects": []}, "Unknown"),
    ],
)
def test_entry_health_reads_old_entries_truthfully(entry: dict[str, object], health: str) -> None:
    assert entry_health(entry) == health


def test_the_helm_releases_of_a_sync_are_in_the_note_and_the_status_file() -> None:
    release = {
        "release": "web",
        "namespace": "shop",
        "chart": "shop",
        "version": "1.1.0",
        "digest": "sha256:" + "c" * 64,
        "path": "apps/shop",
    }
    web = deployment("web")
    res = make_result(revision=SHA, objects=[ObjectResult(web, Action.CREATED)], releases=[release])
    rep = SourceReport.of_sync(source=INFO, result=res, health={web: PROGRESSING}, now=T0)
    note = note_document("agent", {"default": note_entry(rep)})
    status = status_document("agent", {"default": status_entry(rep)}, updated=T0)
    validate_note(note)
    validate_status(status)
    assert note["sources"]["default"]["releases"] == [release]
    assert status["sources"]["default"]["releases"] == [release]
    # Read back as written; a later change of health keeps them.
    assert parse(render(note), kind=NOTE_KIND, what="note")["sources"]["default"]["releases"] == [
        release
    ]
    later = rep.with_health({web: CURRENT}, now=T1)
    assert later is not None
    assert status_entry(later)["releases"] == [release]
    # Without charts the key is absent (documents of earlier versions stay the same).
    assert "releases" not in note_entry(_report(web=CURRENT))
    with pytest.raises(Invalid):
        validate_note(note | {"sources": {"default": note_entry(rep) | {"releases": [{}]}}})
