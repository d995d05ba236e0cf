"""Chart dependencies from a real HTTP chart repository and a real OCI registry, both on
loopback: versions picked by semver range, Chart.lock pins, basic auth from a file, archives
cached by digest, and errors that name the repository but never a password."""

from __future__ import annotations

import os
import time
from pathlib import Path

import helm_python
import pytest

from gitkrm.charts.library import ChartError
from gitkrm.charts.repository import ChartFetcher, Dependency, missing_dependencies
from gitkrm.charts.spec import RepositoryAuth
from gitkrm.source.sweep import UNUSED_FOR
from tests.charts.chart_files import SHOP
from tests.support.chartrepo import ChartRepo, chart_repo
from tests.support.registry import Registry, oci_registry

__all__ = ["chart_repo", "oci_registry"]  # fixtures

CACHE = SHOP / "charts" / "cache"


def publish(repo: ChartRepo, *versions: str) -> None:
    for v in versions:
        repo.publish(CACHE, v)


async def test_a_range_picks_the_newest_and_follows_the_repository(
    chart_repo: ChartRepo, tmp_path: Path
) -> None:
    publish(chart_repo, "0.1.0", "0.2.0", "1.0.0")
    fetcher = ChartFetcher(cache_dir=tmp_path / "charts")
    dep = Dependency("cache", ">=0.1.0 <1.0.0", chart_repo.url)
    got = await fetcher.fetch(dep, chart="front")
    assert (got.name, got.version, got.filename) == ("cache", "0.2.0", "charts/cache-0.2.0.tgz")
    with helm_python.Chart.load_archive(got.data) as c:
        assert c.version == "0.2.0"
    # Cached by digest in the state dir: the next sync reads the index, not the archive.
    assert (tmp_path / "charts" / f"{got.digest.replace(':', '-')}.tgz").read_bytes() == got.data
    again = await ChartFetcher(cache_dir=tmp_path / "charts").fetch(dep, chart="front")
    assert again == got
    assert chart_repo.requests["/index.yaml"] == 2
    assert chart_repo.requests["/cache-0.2.0.tgz"] == 1
    # A newer version in range is picked at the next fetch; the archive unused for a day
    # goes with it (`source.sweep`), so a moving range keeps a bounded cache.
    old = tmp_path / "charts" / f"{got.digest.replace(':', '-')}.tgz"
    os.utime(old, (time.time() - 2 * UNUSED_FOR, time.time() - 2 * UNUSED_FOR))
    publish(chart_repo, "0.3.0")
    newer = await fetcher.fetch(dep, chart="front")
    assert newer.version == "0.3.0"
    assert [p.name for p in (tmp_path / "charts").iterdir()] == [
        f"{newer.digest.replace(':', '-')}.tgz"
    ]


async def test_nothing_in_range_names_what_the_repository_has(chart_repo: ChartRepo) -> None:
    publish(chart_repo, "0.1.0")
    with pytest.raises(ChartError) as e:
        await ChartFetcher().fetch(Dependency("cache", "^2.0", chart_repo.url), chart="front")
    assert "no version in" in e.value.message
    assert "matches '^2.0' (it has 0.1.0)" in e.value.message


async def test_basic_auth_from_a_password_file(chart_repo: ChartRepo, tmp_path: Path) -> None:
    publish(chart_repo, "0.1.0")
    chart_repo.credentials = ("reader", "s3cret-pass")
    (tmp_path / "pw").write_text("s3cret-pass\n")
    auth = RepositoryAuth(url=chart_repo.url, username="reader", password_file=tmp_path / "pw")
    got = await ChartFetcher(auth=[auth]).fetch(
        Dependency("cache", "*", chart_repo.url), chart="front"
    )
    assert got.version == "0.1.0"
    (tmp_path / "pw").write_text("wrong-pass\n")
    with pytest.raises(ChartError) as e:
        await ChartFetcher(auth=[auth]).fetch(
            Dependency("cache", "*", chart_repo.url), chart="front"
        )
    assert "HTTP 401" in e.value.message
    assert "pass" not in e.value.message.replace("HTTP", "")


async def test_an_unreachable_repository_is_one_clear_error() -> None:
    with pytest.raises(ChartError, match=r"chart repository http://127.0.0.1:9/"):
        await ChartFetcher().fetch(Dependency("cache", "*", "http://127.0.0.1:9/"), chart="f")


async def test_oci_dependencies_come_through_helm(oci_registry: Registry, tmp_path: Path) -> None:
    for v in ("0.1.0", "0.4.0", "1.0.0"):
        archive = helm_python.package(CACHE, destination=tmp_path / "dist", version=v)
        helm_python.push(archive, f"{oci_registry.url}/deps", plain_http=True)
    fetcher = ChartFetcher(cache_dir=tmp_path / "charts")
    got = await fetcher.fetch(Dependency("cache", "<1", f"{oci_registry.url}/deps"), chart="f")
    assert got.version == "0.4.0"
    with helm_python.Chart.load_archive(got.data) as c:
        assert (c.name, c.version) == ("cache", "0.4.0")
    assert list((tmp_path / "charts").glob("sha256-*.tgz"))


def test_which_dependencies_need_fetching() -> None:
    chart = (
        b"apiVersion: v2\nname: front\nversion: 1.0.0\ndependencies:\n"
        b"- {name: cache, version: '^0.1', repository: 'http://charts.example.com'}\n"
        b"- {name: vendored, version: 1.0.0, repository: 'http://charts.example.com'}\n"
        b"- {name: packed, version: 1.0.0, repository: 'oci://r.example.com/c'}\n"
        b"- {name: db, version: '~2', repository: 'oci://r.example.com/c'}\n"
    )
    lock = b"dependencies:\n- {name: db, version: 2.3.4, repository: 'oci://r.example.com/c'}\n"
    paths = ["Chart.yaml", "charts/vendored/Chart.yaml", "charts/packed-1.0.0.tgz"]
    deps = missing_dependencies(chart, lock, paths, chart="front")
    assert deps == [
        Dependency("cache", "^0.1", "http://charts.example.com"),
        Dependency("db", "2.3.4", "oci://r.example.com/c"),  # Chart.lock pins it
    ]
    local = b"apiVersion: v2\nname: f\nversion: 1.0.0\ndependencies:\n- {name: x, repository: file://../x}\n"
    assert missing_dependencies(local, None, ["Chart.yaml"], chart="f") == [
        Dependency("x", "*", "file://../x")  # packed from the revision (sync.charts)
    ]
    alias = local.replace(b"file://../x", b"'@mine'")
    with pytest.raises(ChartError, match=r"dependency 'x' \(@mine\) is not in charts/"):
        missing_dependencies(alias, None, ["Chart.yaml"], chart="f")
