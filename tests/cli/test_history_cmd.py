"""`gitkrm history`: the audit trail from a clone, a remote URL or an agent's state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from gitkrm.cli.history_cmd import main
from tests.report.report_fixtures import (
    ReporterMaker,
    SourceMaker,
    make_reporter,
    make_source,
    remote,
)
from tests.report.report_helpers import make_history
from tests.source.source_gitrepo import RemoteRepo, git

__all__ = ["make_reporter", "make_source", "remote"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


async def test_a_clone_in_the_current_directory(
    make_source: SourceMaker,
    make_reporter: ReporterMaker,
    remote: RemoteRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, second, third = await make_history(make_source, make_reporter, remote)
    git("clone", "-q", str(remote.bare), str(tmp_path / "clone"), cwd=tmp_path)
    monkeypatch.chdir(tmp_path / "clone")
    code, out, err = _run(capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == [
        "COMMIT", "DATE", "AGENT", "SOURCE", "RESULT", "HEALTH", "SYNCED", "SUBJECT"
    ]  # fmt: skip
    assert lines[1].startswith(third[:12])
    assert lines[1].split()[3:8] == [
        "edge-1",
        "default",
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
    assert lines[4].split()[:5] == [
        "edge-2",
        "apps",
        "Succeeded",
        "Current",
        "2024-05-01T10:00:00Z",
    ]
    assert lines[5].startswith(second[:12])
    assert lines[5].split()[3:] == ["-", "-", "-", "-", "-", "second"]
    assert lines[6].startswith(first[:12])
    assert len(lines) == 7


async def test_outputs_for_programs(
    make_source: SourceMaker,
    make_reporter: ReporterMaker,
    remote: RemoteRepo,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, _, third = await make_history(make_source, make_reporter, remote)
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
    make_source: SourceMaker,
    make_reporter: ReporterMaker,
    remote: RemoteRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, _, third = await make_history(make_source, make_reporter, remote)
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
    assert out.splitlines()[1].split()[3:] == ["-", "-", "-", "-", "-", "first"]


def test_gitkrm_history_is_a_command(
    remote: RemoteRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    from gitkrm.cli.main import main as gitkrm

    assert gitkrm(["history", "--repo", str(remote.bare), "-n", "1", "-o", "json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert [c["subject"] for c in data["commits"]] == ["first"]
