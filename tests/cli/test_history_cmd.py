"""`gitkrm history`: the audit trail from a clone, a remote URL or an agent's state."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from gitkrm.cli.history_cmd import main
from gitkrm.store import open_store
from tests.report.report_fixtures import (
    history,
    make_reporter,
    make_source,
    remote,
)
from tests.report.report_helpers import objects_of, read_note, read_status
from tests.source.source_gitrepo import RemoteRepo, git

__all__ = ["history", "make_reporter", "make_source", "remote"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


async def test_a_clone_in_the_current_directory(
    history: list[str],
    remote: RemoteRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, second, third = history
    git("clone", "-q", str(remote.bare), str(tmp_path / "clone"), cwd=tmp_path)
    monkeypatch.chdir(tmp_path / "clone")
    code, out, err = _run(capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == [
        "COMMIT", "DATE", "AGENT", "SOURCE", "PARENT", "RESULT", "HEALTH", "SYNCED", "SUBJECT"
    ]  # fmt: skip
    assert lines[1].startswith(third[:12])
    assert lines[1].split()[3:9] == [
        "edge-1",
        "default",
        "-",
        "Failed",
        "Failed",
        "2024-05-01T10:05:00Z",
    ]
    assert lines[1].endswith("third")
    assert (
        lines[2] == "    ! edge-1/default: apps/Deployment default/web: Failed "
        "(ProgressDeadlineExceeded: Progress deadline exceeded)"
    )
    assert lines[3] == "    ! edge-1/default: error: boom"
    assert lines[4].split()[:6] == [
        "edge-2",
        "apps",
        "-",
        "Succeeded",
        "Current",
        "2024-05-01T10:00:00Z",
    ]
    assert lines[5].startswith(second[:12])
    assert lines[5].split()[3:] == ["-", "-", "-", "-", "-", "-", "second"]
    assert lines[6].startswith(first[:12])
    assert len(lines) == 7


async def test_outputs_for_programs(
    history: list[str],
    remote: RemoteRepo,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, _, third = history
    code, out, _ = _run(
        capsys, "--repo", str(remote.bare), "-o", "json", "-n", "1", "--agent", "edge-2"
    )
    assert code == 0
    data: dict[str, Any] = orjson.loads(out)
    assert [c["commit"] for c in data["commits"]] == [third]
    assert [(s["agent"], s["source"], s["health"]) for s in data["commits"][0]["syncs"]] == [
        ("edge-2", "apps", "Current")
    ]
    code, out, _ = _run(
        capsys, "--repo", f"file://{remote.bare}", "-o", "yaml", "--source", "default"
    )
    assert code == 0
    doc = yaml.safe_load(out)
    assert doc["commits"][0]["syncs"][0]["errors"] == ["boom"]


async def test_the_state_directory_by_default(
    history: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, _, third = history
    (tmp_path / ".gitkrm").symlink_to(tmp_path / "state")
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(capsys, "-o", "json")
    assert code == 0
    assert [c["commit"] for c in orjson.loads(out)["commits"]] == [third, first]


def test_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], remote: RemoteRepo
) -> None:
    for args, message in [
        (["--repo", str(tmp_path / "nope")], "no such repository"),
        (["--repo", str(remote.bare), "-n", "0"], "-n must be at least 1"),
        (["--state", str(tmp_path), "--branch", "main"], "--branch goes with --repo"),
        (["--state", str(tmp_path)], "no Git caches"),
        (["--repo", str(remote.bare), "--branch", "nope"], "is not a commit"),
    ]:
        code, out, err = _run(capsys, *args)
        assert code == 2
        assert out == ""
        assert err.startswith("gitkrm: error: ")
        assert message in err
        assert err.count("\n") == 1


def test_a_repository_without_syncs(remote: RemoteRepo, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--repo", str(remote.work), "--no-fetch")
    assert code == 0
    assert out.splitlines()[1].split()[3:] == ["-", "-", "-", "-", "-", "-", "first"]


def test_gitkrm_history_is_a_command(
    remote: RemoteRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    from gitkrm.cli.main import main as gitkrm

    assert gitkrm(["history", "--repo", str(remote.bare), "-n", "1", "-o", "json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert [c["subject"] for c in data["commits"]] == ["first"]


# -- what the agent records for syncs that did not go well (the real agent, store and Git) --

AGENT = "edge-1"


def _cm(name: str, data: str = "a: '1'", *, immutable: bool = False) -> str:
    frozen = "immutable: true\n" if immutable else ""
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default}}\n"
        f"{frozen}data: {{{data}}}\n"
    )


def _agent(capsys: pytest.CaptureFixture[str], *args: str) -> int:
    """`gitkrm run --once` of agent edge-1 (its reports flushed into the remote on exit)."""
    from gitkrm.cli.main import main as gitkrm

    code = gitkrm(["run", "--once", "--agent-name", AGENT, *args])
    capsys.readouterr()
    return code


def _noted(repo: RemoteRepo, commit: str) -> dict[str, Any]:
    """source -> entry of the commit's note by edge-1."""
    note = read_note(repo.bare, AGENT, commit)  # validated against the note schema
    assert note is not None, f"no note on {commit[:12]}"
    sources: dict[str, Any] = note["sources"]
    return sources


def _entry(repo: RemoteRepo, commit: str) -> dict[str, Any]:
    entry: dict[str, Any] = _noted(repo, commit)["default"]
    return entry


def _status(repo: RemoteRepo) -> dict[str, Any]:
    status = read_status(repo.bare, AGENT)  # validated against the status schema
    assert status is not None, "no status file"
    sources: dict[str, Any] = status["sources"]
    return sources


def _history(capsys: pytest.CaptureFixture[str], repo: RemoteRepo, *args: str) -> list[str]:
    code, out, err = _run(capsys, "--repo", str(repo.bare), *args)
    assert (code, err) == (0, "")
    return out.splitlines()


def _row(lines: list[str], commit: str) -> tuple[list[str], list[str]]:
    """A commit's first row from AGENT to SYNCED (without PARENT), and its `!` lines."""
    at = next(i for i, line in enumerate(lines) if line.startswith(commit[:12]))
    cells = lines[at].split()
    cells = cells[2:] if cells[1] == "-" else cells[3:]  # DATE is "-" or "YYYY-MM-DD HH:MM"
    details = []
    for line in lines[at + 1 :]:
        if not line.startswith("    !"):
            break
        details.append(line)
    return [*cells[:2], *cells[3:6]], details


@pytest.fixture
def repo(tmp_path: Path) -> RemoteRepo:
    return RemoteRepo(tmp_path / "repo")


def test_a_source_that_never_synced_is_unknown_not_current(
    repo: RemoteRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("ok.yaml", _cm("ok"))
    repo.write("bad.yaml", _cm("bad") + "spec: 3\n")  # refused by validation: nothing applied
    bad = repo.publish("bad")
    assert _agent(capsys, "--repo", repo.url, "--state", str(tmp_path / "state")) == 1
    entry = _entry(repo, bad)
    assert (entry["result"], entry["health"], entry["objects"]) == ("Failed", "Unknown", [])
    assert set(entry["counts"].values()) == {0}
    assert "bad.yaml:1: ConfigMap default/bad" in entry["errors"][0]
    status = _status(repo)["default"]
    assert (status["revision"], status["health"], status["objects"]) == (bad, "Unknown", [])
    cells, details = _row(_history(capsys, repo), bad)
    assert cells[:4] == [AGENT, "default", "Failed", "Unknown"]
    assert details[0] == f"    ! {AGENT}/default: not applied: nothing of this revision was synced"
    assert details[1].startswith(f"    ! {AGENT}/default: error: bad.yaml:1: ConfigMap default/bad")


def test_a_failed_apply_shows_the_objects_and_their_health(
    repo: RemoteRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = str(tmp_path / "state")
    good = repo.publish(
        "good", {"ok.yaml": _cm("ok"), "frozen.yaml": _cm("frozen", immutable=True)}
    )
    assert _agent(capsys, "--repo", repo.url, "--state", state) == 0
    repo.write("frozen.yaml", _cm("frozen", "a: '2'", immutable=True))  # the store refuses it
    failed = repo.publish("change an immutable ConfigMap")
    assert _agent(capsys, "--repo", repo.url, "--state", state) == 1
    entry = _entry(repo, failed)
    assert (entry["result"], entry["health"]) == ("Failed", "Failed")
    assert (entry["counts"]["failed"], entry["counts"]["unchanged"]) == (1, 1)
    [frozen] = entry["objects"]  # the objects not Current: the one the sync failed to apply
    assert (frozen["name"], frozen["health"], frozen["reason"]) == (
        "frozen",
        "Failed",
        "SyncFailed",
    )
    assert "immutable" in frozen["message"]
    status = _status(repo)["default"]
    assert status["health"] == "Failed"
    assert objects_of(status) == {
        "ConfigMap default/frozen": "Failed",
        "ConfigMap default/ok": "Current",
    }
    lines = _history(capsys, repo)
    cells, details = _row(lines, failed)
    assert cells[:4] == [AGENT, "default", "Failed", "Failed"]
    assert details[0].startswith(
        f"    ! {AGENT}/default: ConfigMap default/frozen: Failed (SyncFailed: "
    )
    assert _row(lines, good)[0][:4] == [AGENT, "default", "Succeeded", "Current"]


def test_a_refused_object_is_failed_whatever_its_own_health(
    repo: RemoteRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    state.mkdir()

    async def someone_elses() -> None:
        store = await open_store(f"sqlite:///{state / 'store.db'}")
        try:
            await store.create(yaml.safe_load(_cm("taken", "b: '0'")))
        finally:
            await store.close()

    asyncio.run(someone_elses())  # exists, owned by no source: adoption "never" refuses it
    head = repo.publish("one taken", {"taken.yaml": _cm("taken"), "mine.yaml": _cm("mine")})
    assert _agent(capsys, "--repo", repo.url, "--state", str(state)) == 1
    entry = _entry(repo, head)
    assert (entry["result"], entry["health"]) == ("Failed", "Failed")
    assert (entry["counts"]["refused"], entry["counts"]["created"]) == (1, 1)
    [taken] = entry["objects"]
    assert (taken["name"], taken["health"], taken["reason"]) == ("taken", "Failed", "SyncRefused")
    assert "no gitkrm source owns it" in taken["message"]
    status = _status(repo)["default"]
    assert objects_of(status) == {
        "ConfigMap default/mine": "Current",
        "ConfigMap default/taken": "Failed",
    }
    cells, details = _row(_history(capsys, repo), head)
    assert cells[:4] == [AGENT, "default", "Failed", "Failed"]
    assert details[0].startswith(
        f"    ! {AGENT}/default: ConfigMap default/taken: Failed (SyncRefused: conflict: "
    )


def _sources(path: Path, url: str, *, suspended: set[str]) -> str:
    docs = [
        f"apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {{name: {name}}}\n"
        f"spec: {{url: {url}, path: {name}, suspend: {str(name in suspended).lower()}}}\n"
        for name in ("apps", "web", "db")
    ]
    path.write_text("---\n".join(docs))
    return str(path)


def test_suspended_sources_keep_their_last_word_and_never_synced_ones_say_nothing(
    repo: RemoteRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = str(tmp_path / "state")
    config = tmp_path / "sources.yaml"
    for name in ("apps", "web", "db"):
        repo.write(f"{name}/cm.yaml", _cm(name))
    first = repo.publish("first")
    # db is suspended from the start: it never syncs.
    args = ("--config", _sources(config, repo.url, suspended={"db"}), "--state", state)
    assert _agent(capsys, *args) == 0
    before = _status(repo)
    assert sorted(before) == ["apps", "web"]
    # web is suspended too; a new commit changes every source's files.
    for name in ("apps", "web", "db"):
        repo.write(f"{name}/cm.yaml", _cm(name, "a: '2'"))
    second = repo.publish("second")
    args = ("--config", _sources(config, repo.url, suspended={"web", "db"}), "--state", state)
    assert _agent(capsys, *args) == 0
    assert sorted(_noted(repo, second)) == ["apps"]  # web and db did not sync it
    assert sorted(_noted(repo, first)) == ["apps", "web"]
    status = _status(repo)
    assert sorted(status) == ["apps", "web"]  # web keeps its entry: its last word
    assert status["web"] == before["web"]
    assert (status["apps"]["revision"], status["apps"]["health"]) == (second, "Current")
    for source, rows in [
        ("web", {second: ["-"] * 5, first: [AGENT, "web", "Succeeded", "Current"]}),
        ("db", {second: ["-"] * 5, first: ["-"] * 5}),
    ]:
        lines = _history(capsys, repo, "--source", source)
        for commit, cells in rows.items():
            assert _row(lines, commit)[0][: len(cells)] == cells
