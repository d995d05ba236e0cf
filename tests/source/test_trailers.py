"""`Gitkrm-Allow-Prune` read as git parses trailers, from real commits of a Git source."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.source import GitRef, GitSource, GitSourceSpec
from gitkrm.source.trailers import parse_allow_prune
from tests.sync.sync_helpers import Remote, configmap


@pytest.mark.parametrize(
    ("text", "value"),
    [("", None), ("12\n", 12), ("3\n40\n", 40), ("many\n", None), ("-4\n7\n", 7)],
)
def test_parse(text: str, value: int | None) -> None:
    assert parse_allow_prune(text) == value


@pytest.mark.parametrize(
    ("message", "value"),
    [
        ("plain", None),
        ("retire the shop\n\nGitkrm-Allow-Prune: 42", 42),
        ("retire\n\nGitkrm-Allow-Prune: 3\nSigned-off-by: A <a@example.invalid>", 3),
        ("Gitkrm-Allow-Prune: 9 in the subject line is no trailer", None),
        ("body\n\nGitkrm-Allow-Prune: 5\n\nmore body after it", None),
    ],
)
async def test_a_snapshot_carries_its_commits_trailer(
    tmp_path: Path, message: str, value: int | None
) -> None:
    remote = Remote(tmp_path / "repo")
    remote.write("cm.yaml", configmap("a", ns="default"))
    remote.commit(message)
    spec = GitSourceSpec(name="s", url=remote.url, ref=GitRef.from_flags(branch="main"))
    source = GitSource(spec, cache_dir=tmp_path / "cache")
    try:
        snap = await source.snapshot()
    finally:
        await source.close()
    assert snap.allow_prune == value
