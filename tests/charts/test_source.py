"""gitkrm.charts.source: a chart archive read into a snapshot, bounded, links never followed;
the revision moves with the picked version and digest."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from gitkrm.charts.library import ChartError
from gitkrm.charts.repository import ChartFetcher
from gitkrm.charts.source import ChartRepositorySource, unpack
from gitkrm.charts.spec import ChartRef
from tests.charts.release_charts import WEBAPP
from tests.support.chartrepo import ChartRepo, chart_repo

__all__ = ["chart_repo"]


def tgz(entries: dict[str, bytes], *, link: str | None = None) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link is not None:
            info = tarfile.TarInfo("c/evil")
            info.type = tarfile.SYMTYPE
            info.linkname = link
            tar.addfile(info)
    return gzip.compress(raw.getvalue())


def test_files_are_relative_to_the_chart_and_links_are_dropped() -> None:
    data = tgz(
        {"c/Chart.yaml": b"name: c\n", "c/templates/a.yaml": b"x", "c/../../etc": b"no"},
        link="/etc/passwd",
    )
    assert unpack(data, chart="c") == {"Chart.yaml": b"name: c\n", "templates/a.yaml": b"x"}


def test_an_archive_without_chart_yaml_or_unreadable_is_refused() -> None:
    with pytest.raises(ChartError, match=r"has no Chart\.yaml"):
        unpack(tgz({"c/values.yaml": b""}), chart="c")
    with pytest.raises(ChartError, match="can't be read"):
        unpack(b"\x1f\x8bnot gzip", chart="c")


def test_an_archive_bomb_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gitkrm.charts.source.MAX_UNPACKED", 1000)
    with pytest.raises(ChartError, match="unpacks to more than 1,000 bytes"):
        unpack(tgz({"c/Chart.yaml": b"a" * 5000}), chart="c")


async def test_the_revision_moves_with_the_repository(
    chart_repo: ChartRepo, tmp_path: Path
) -> None:
    chart_repo.publish(WEBAPP, "1.0.0")
    source = ChartRepositorySource(
        name="s",
        chart=ChartRef(repository=chart_repo.url, name="webapp", version="1.x"),
        fetcher=ChartFetcher(cache_dir=tmp_path / "charts"),
    )
    first = await source.snapshot()
    assert first.revision.startswith("1.0.0@sha256:")
    assert "templates/deployment.yaml" in first.files
    assert await source.snapshot() is first  # nothing moved: the same snapshot
    chart_repo.publish(WEBAPP, "1.3.0")
    assert (await source.poll() or "").startswith("1.3.0@sha256:")
    second = await source.snapshot()
    assert b"version: 1.3.0" in second.read("Chart.yaml")
    await source.close()
