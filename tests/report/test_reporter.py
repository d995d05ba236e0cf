from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gitkrm.report.statusfile import STATUS_REF, StatusFile
from gitkrm.source import LocalSource
from gitkrm.sync.results import Action
from tests.report.report_fixtures import ReporterMaker, SourceMaker, reporting
from tests.report.report_helpers import (
    CURRENT,
    DEADLINE,
    PROGRESSING,
    PushLog,
    deployment,
    git_out,
    objects_of,
    read_note,
    read_status,
    result,
    service,
    synced,
)
from tests.source.source_gitrepo import RemoteRepo


async def test_a_sync_is_noted_and_in_the_status_file(
    make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo
) -> None:
    src, rep = await reporting(make_source, make_reporter, remote)
    head = remote.head()
    web, svc = deployment("web"), service("web")
    await synced(rep, head, {web: PROGRESSING, svc: CURRENT})
    cache = src.cache_dir
    note = read_note(cache, "edge-1", head)
    assert note is not None
    entry = note["sources"]["default"]
    assert (entry["result"], entry["health"]) == ("Succeeded", "InProgress")
    assert objects_of(entry) == {"Deployment default/web": "InProgress"}
    status = read_status(cache, "edge-1", STATUS_REF)
    assert status is not None
    assert objects_of(status["sources"]["default"]) == {
        "Deployment default/web": "InProgress",
        "Service default/web": "Current",
    }
    assert await rep.flush(timeout=10)
    assert read_note(remote.bare, "edge-1", head) == note
    assert read_status(remote.bare, "edge-1") == status
    state = rep.push_state("default")
    assert state is not None
    assert state.ok
    assert not state.pending
    assert state.last_success


async def test_health_changes_wait_for_the_throttle_and_flush_writes_the_last(
    make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo
) -> None:
    src, rep = await reporting(make_source, make_reporter, remote, throttle_s=3600)
    head = remote.head()
    web, db = deployment("web"), deployment("db")
    await synced(rep, head, {web: PROGRESSING, db: PROGRESSING})
    stats = rep.stats("default")
    assert stats is not None
    assert (stats.note_writes, stats.status_writes) == (1, 1)
    notes_tip = git_out(src.cache_dir, "rev-parse", "refs/notes/gitkrm/edge-1")
    # Same verdicts again: nothing to do at all.
    await rep.record_health(source_name="default", revision=head, health={web: PROGRESSING})
    await rep.settled()
    deferred = stats.deferred
    # A change that keeps the aggregate (InProgress): held back by the throttle.
    await rep.record_health(source_name="default", revision=head, health={web: CURRENT})
    await rep.settled()
    assert stats.deferred == deferred + 1
    assert (stats.note_writes, stats.status_writes) == (1, 1)
    assert git_out(src.cache_dir, "rev-parse", "refs/notes/gitkrm/edge-1") == notes_tip
    # Then the deadline passes for db; the final state is written by flush.
    await rep.record_health(source_name="default", revision=head, health={db: DEADLINE})
    assert await rep.flush(timeout=10)
    assert (stats.note_writes, stats.status_writes) == (2, 2)
    note = read_note(remote.bare, "edge-1", head)
    assert note is not None
    assert note["sources"]["default"]["health"] == "Failed"
    assert objects_of(note["sources"]["default"]) == {"Deployment default/db": "Failed"}
    status = read_status(remote.bare, "edge-1")
    assert status is not None
    assert status["sources"]["default"]["health"] == "Failed"


async def test_a_new_commit_is_noted_at_once_and_the_old_note_keeps_its_last_health(
    make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo
) -> None:
    src, rep = await reporting(make_source, make_reporter, remote, throttle_s=3600)
    first = remote.head()
    web = deployment("web")
    await synced(rep, first, {web: PROGRESSING})
    await rep.record_health(source_name="default", revision=first, health={web: DEADLINE})
    second = remote.publish("second", {"app.yaml": "changed: true\n"})
    await src.snapshot()
    await synced(rep, second, {web: PROGRESSING}, action=Action.CONFIGURED)
    new = read_note(src.cache_dir, "edge-1", second)
    assert new is not None
    assert new["sources"]["default"]["counts"]["configured"] == 1
    # Health of the old revision is no longer followed.
    await rep.record_health(source_name="default", revision=first, health={web: CURRENT})
    await rep.flush(timeout=10)
    old = read_note(remote.bare, "edge-1", first)
    assert old is not None
    assert old["sources"]["default"]["health"] == "Failed"
    status = read_status(remote.bare, "edge-1")
    assert status is not None
    assert status["sources"]["default"]["revision"] == second


async def test_a_drift_check_that_changed_nothing_keeps_the_sync_time(
    make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo
) -> None:
    _src, rep = await reporting(make_source, make_reporter, remote)
    head = remote.head()
    web = deployment("web")
    await synced(rep, head, {web: CURRENT})
    stats = rep.stats("default")
    assert stats is not None
    writes = (stats.note_writes, stats.status_writes)
    await synced(rep, head, {web: CURRENT}, action=Action.UNCHANGED)
    assert (stats.note_writes, stats.status_writes) == writes


async def test_two_sources_of_one_agent_share_the_note(
    make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo
) -> None:
    apps = await make_source(remote.url, name="apps", path="")
    infra = await make_source(remote.url, name="infra")
    rep = make_reporter(throttle_s=3600)
    rep.register("apps", apps)
    rep.register("infra", infra)
    head = remote.head()
    web = deployment("web")
    await rep.record_sync(source_name="apps", result=result(head, [web]), health={web: CURRENT})
    await rep.record_sync(
        source_name="infra", result=result(head, [service("db")]), health={service("db"): CURRENT}
    )
    assert await rep.flush(timeout=10)
    note = read_note(remote.bare, "edge-1", head)
    assert note is not None
    assert sorted(note["sources"]) == ["apps", "infra"]
    status = read_status(remote.bare, "edge-1")
    assert status is not None
    assert sorted(status["sources"]) == ["apps", "infra"]
    rep.unregister("infra")
    assert await rep.flush(timeout=10)
    status = read_status(remote.bare, "edge-1")
    assert status is not None
    assert sorted(status["sources"]) == ["apps"]
    note = read_note(remote.bare, "edge-1", head)
    assert note is not None
    assert sorted(note["sources"]) == ["apps", "infra"]


async def test_plain_directories_and_unknown_sources_are_not_reported(
    make_reporter: ReporterMaker, tmp_path: Path
) -> None:
    rep = make_reporter()
    rep.register("dir", LocalSource(name="dir", root=tmp_path))
    web = deployment("web")
    await rep.record_sync(source_name="dir", result=result("a" * 40, [web]), health={})
    await rep.record_health(source_name="nope", revision="a" * 40, health={web: CURRENT})
    assert rep.push_state("dir") is None
    assert await rep.flush(timeout=1)


async def test_push_failures_are_retried_reported_and_never_raised(
    make_source: SourceMaker,
    make_reporter: ReporterMaker,
    remote: RemoteRepo,
    caplog: pytest.LogCaptureFixture,
) -> None:
    pushes = PushLog()
    _src, rep = await reporting(make_source, make_reporter, remote, on_push_state=pushes)
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    head = remote.head()
    with caplog.at_level(logging.WARNING, logger="gitkrm.report"):
        await rep.record_sync(
            source_name="default", result=result(head, [deployment("w")]), health={}
        )
        state = await pushes.until(lambda s: s.failures >= 2)
    assert state.pending
    assert state.next_attempt is not None
    assert state.last_error is not None
    assert "pre-receive hook declined" in state.last_error
    assert "reports not pushed" in caplog.text
    assert {name for name, _ in pushes.states} == {"default"}
    assert read_note(remote.bare, "edge-1", head) is None
    hook.unlink()
    state = await pushes.until(lambda s: s.ok)
    assert not state.pending
    assert rep.push_state("default") == state
    assert read_note(remote.bare, "edge-1", head) is not None


async def test_flush_gives_up_at_its_deadline(
    make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo
) -> None:
    src, rep = await reporting(make_source, make_reporter, remote)
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    await rep.record_sync(
        source_name="default", result=result(remote.head(), [deployment("w")]), health={}
    )
    assert not await rep.flush(timeout=0.5)
    # The final state is in the cache even so, ready for the next push.
    assert read_note(src.cache_dir, "edge-1", remote.head()) is not None


async def test_a_source_not_synced_in_this_term_keeps_its_status_entry(
    make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo
) -> None:
    """A suspended source (or one not synced yet since the agent started) is still the
    agent's: the status file keeps its last word instead of dropping it."""
    apps = await make_source(remote.url, name="apps")
    infra = await make_source(remote.url, name="infra")
    head = remote.head()
    web, db = deployment("web"), service("db")
    before = make_reporter()
    before.register("apps", apps)
    before.register("infra", infra)
    await before.record_sync(source_name="apps", result=result(head, [web]), health={web: CURRENT})
    await before.record_sync(source_name="infra", result=result(head, [db]), health={db: CURRENT})
    assert await before.flush(timeout=10)
    first = read_status(remote.bare, "edge-1")
    assert first is not None
    await before.close()
    # The agent starts again; infra is suspended: only apps syncs.
    rep = make_reporter()
    rep.register("apps", apps)
    rep.register("infra", infra)
    await rep.record_sync(source_name="apps", result=result(head, [web]), health={web: DEADLINE})
    assert await rep.flush(timeout=10)
    status = read_status(remote.bare, "edge-1")
    assert status is not None
    assert status["sources"]["infra"] == first["sources"]["infra"]
    assert status["sources"]["apps"]["health"] == "Failed"
    log = git_out(remote.bare, "log", "-1", "--format=%B", "gitkrm/status")
    assert "infra: " in log
    assert "(not synced since the agent started)" in log
    # A source the agent no longer has leaves the file.
    rep.unregister("infra")
    await rep.record_sync(source_name="apps", result=result(head, [web]), health={web: CURRENT})
    assert await rep.flush(timeout=10)
    status = read_status(remote.bare, "edge-1")
    assert status is not None
    assert sorted(status["sources"]) == ["apps"]


async def test_a_report_costs_a_handful_of_git_processes(
    make_source: SourceMaker,
    make_reporter: ReporterMaker,
    remote: RemoteRepo,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The note and the status file of a sync: read through one cat-file, written by one
    fast-import, pushed once (the remote's refs fetched while the sync ran). The status
    file of a source that reported is not read back."""
    _src, rep = await reporting(make_source, make_reporter, remote)
    read_back: list[str] = []
    monkeypatch.setattr(StatusFile, "read", lambda *a, **k: read_back.append("read"))
    head = remote.head()
    rep.prepare("default")  # as the agent does when a sync starts
    web, svc = deployment("web"), service("web")
    await rep.record_sync(
        source_name="default",
        result=result(head, [web, svc]),
        health={web: PROGRESSING, svc: CURRENT},
    )
    assert await rep.flush(timeout=10)
    calls = rep.git_calls("default")
    assert calls is not None
    assert dict(calls) == {
        "cat-file": 1,  # every ref and blob lookup
        "ls-remote": 1,  # the remote's report refs (none yet: nothing to fetch)
        "fast-import": 1,  # the note and the status file
        "push": 1,
        "update-ref": 1,  # our copies of the pushed refs
    }
    assert read_back == []
    note = read_note(remote.bare, "edge-1", head)
    assert note is not None
    assert objects_of(note["sources"]["default"]) == {"Deployment default/web": "InProgress"}
    assert read_status(remote.bare, "edge-1") is not None


async def test_reports_build_on_the_remotes_fetched_while_the_sync_runs(
    make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo
) -> None:
    head = remote.head()
    web = deployment("web")
    other = make_reporter("edge-2")
    other.register("default", await make_source(remote.url, state="state-2"))
    await other.record_sync(source_name="default", result=result(head, [web]), health={})
    assert await other.flush(timeout=10)
    theirs = git_out(remote.bare, "rev-parse", "gitkrm/status").strip()
    _src, rep = await reporting(make_source, make_reporter, remote)
    rep.prepare("default")
    await rep.record_sync(source_name="default", result=result(head, [web]), health={})
    assert await rep.flush(timeout=10)
    # Our status commit sits right on theirs: no replay, no ancestry asked of git.
    parents = git_out(remote.bare, "log", "-1", "--format=%P", "gitkrm/status").split()
    assert parents == [theirs]
    calls = rep.git_calls("default")
    assert calls is not None
    assert (calls["merge-base"], calls["fast-import"]) == (0, 1)
    assert calls["push"] == 1  # not refused as stale
    files = git_out(remote.bare, "ls-tree", "-r", "--name-only", "gitkrm/status").split()
    assert files == ["status/edge-1.yaml", "status/edge-2.yaml"]
