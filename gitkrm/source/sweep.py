"""The content-addressed caches of a state directory (unpacked OCI artifacts, chart
archives), shared by its sources: each use touches its entry, and whoever adds an entry
removes those nobody used for a day, so a long-lived agent that follows a moving tag
keeps a bounded cache instead of one more entry per push."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path
from typing import Final

UNUSED_FOR: Final = 24 * 3600.0
"""Seconds without a use after which an entry goes (a source polls far more often)."""


def touch(path: Path) -> None:
    """`path` is in use (its modification time is the last use)."""
    with contextlib.suppress(OSError):  # gone meanwhile: the next use adds it again
        os.utime(path)


def sweep(directory: Path, *, keep: Path, unused_for: float = UNUSED_FOR) -> int:
    """Remove the entries of `directory` other than `keep` that were not used for
    `unused_for` seconds; how many went. Links are removed, never followed."""
    cutoff = time.time() - unused_for
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        if entry.name == keep.name:
            continue
        try:
            if entry.stat(follow_symlinks=False).st_mtime >= cutoff:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue  # in use by another process's unpack, or gone already
        removed += 1
    return removed
