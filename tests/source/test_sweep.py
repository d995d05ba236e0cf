"""The shared content-addressed caches' sweep (gitkrm.source.sweep): entries unused for
the period go, the one just added, recently used ones and what links point at stay."""

from __future__ import annotations

import os
import time
from pathlib import Path

from gitkrm.source.sweep import UNUSED_FOR, sweep, touch


def aged(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def test_unused_entries_go_and_used_ones_stay(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "sha256-old").mkdir(parents=True)
    (cache / "sha256-old" / "cm.yaml").write_text("a: b\n")
    (cache / "old.tgz").write_bytes(b"x")
    (cache / "sha256-recent").mkdir()
    (cache / "sha256-new").mkdir()
    for name in ("sha256-old", "old.tgz", "sha256-recent", "sha256-new"):
        aged(cache / name, UNUSED_FOR + 60)
    touch(cache / "sha256-recent")  # a source used it since
    assert sweep(cache, keep=cache / "sha256-new") == 2
    assert sorted(p.name for p in cache.iterdir()) == ["sha256-new", "sha256-recent"]


def test_a_link_is_removed_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "link").symlink_to(outside, target_is_directory=True)
    aged(cache / "link", UNUSED_FOR + 60)
    assert sweep(cache, keep=cache / "none") == 1
    assert not (cache / "link").exists()
    assert (outside / "keep.txt").read_text() == "mine\n"


def test_a_missing_cache_sweeps_nothing(tmp_path: Path) -> None:
    assert sweep(tmp_path / "absent", keep=tmp_path / "x") == 0
    touch(tmp_path / "absent")  # no error: the next use adds it
