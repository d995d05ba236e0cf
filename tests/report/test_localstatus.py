from __future__ import annotations

from pathlib import Path

from gitkrm.report import health_rows, read_local_status, source_health
from gitkrm.report.localstatus import status_health_text
from tests.report.report_fixtures import ReporterMaker, SourceMaker, reporting
from tests.report.report_helpers import CURRENT, DEADLINE, deployment, service, synced
from tests.source.source_gitrepo import RemoteRepo


async def test_status_reads_the_status_files_of_the_state(
    make_source: SourceMaker, make_reporter: ReporterMaker, remote: RemoteRepo, tmp_path: Path
) -> None:
    assert read_local_status(tmp_path / "state") == {}
    _src, rep = await reporting(make_source, make_reporter, remote)
    web, svc = deployment("web", "team-a"), service("web", "team-a")
    await synced(rep, remote.head(), {web: DEADLINE, svc: CURRENT})
    docs = read_local_status(tmp_path / "state")
    assert list(docs) == ["edge-1"]
    rows = health_rows(docs["edge-1"])
    assert rows == [
        ["default", "team-a", "Service", "web", "Current", ""],
        ["default", "team-a", "apps/Deployment", "web", "Failed", "Progress deadline exceeded"],
    ]
    assert health_rows(docs["edge-1"], sources=["other"]) == []
    summary = source_health(docs["edge-1"])
    assert summary["default"]["health"] == "Failed"
    assert summary["default"]["objects"] == 2
    assert summary["default"]["notCurrent"] == 1
    assert summary["default"]["revision"] == remote.head()
    text = status_health_text(tmp_path / "state")
    assert text.splitlines()[2].split()[:5] == [
        "default",
        "team-a",
        "apps/Deployment",
        "web",
        "Failed",
    ]
    assert status_health_text(tmp_path / "state", agent="other") == ""
    assert status_health_text(tmp_path / "state", sources=["other"]) == ""
