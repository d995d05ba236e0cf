"""open_store URLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.errors import BadRequest
from gitkrm.store import Store, open_store, parse_store_url
from gitkrm.store.sqlite import SqliteStore


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///:memory:", ":memory:"),
        ("sqlite:///state/store.db", "state/store.db"),
        ("sqlite:////var/lib/gitkrm/store.db", "/var/lib/gitkrm/store.db"),
    ],
)
def test_sqlite_urls(url: str, path: str) -> None:
    target = parse_store_url(url)
    assert target.scheme == "sqlite"
    assert target.path == path


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("store.db", "must look like"),
        ("sqlite://store.db", "use sqlite:///relative"),
        ("sqlite:///", "names no database file"),
        ("postgres://x", "unknown scheme 'postgres'"),
        ("kube://?kubeconfig=/nonexistent/k", "kubeconfig /nonexistent/k: No such file"),
        ("kube://?kubeconfig=/k&qps=fast", "qps='fast' is no number"),
        ("kube://?kubeconfig=/k&colour=red", "unknown option 'colour'"),
        ("kube://?context=c", "a context needs a kubeconfig"),
    ],
)
async def test_bad_urls(url: str, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        await open_store(url)


async def test_open_relative_and_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rel = await open_store("sqlite:///rel.db")
    assert isinstance(rel, Store)
    assert isinstance(rel, SqliteStore)
    await rel.close()
    assert (tmp_path / "rel.db").exists()
    absolute = await open_store(f"sqlite:///{tmp_path}/abs.db", history_limit=100)
    await absolute.close()
    assert (tmp_path / "abs.db").exists()
    ro = await open_store(f"sqlite:///{tmp_path}/abs.db", read_only=True)
    await ro.close()
