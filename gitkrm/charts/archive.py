"""A chart's files from a snapshot, packed as a chart archive in memory for Helm.

Helm loads an archive without touching the disk; the entries sit under the chart's name as
in `helm package`, filtered by the chart's `.helmignore` (gitignore rules) as Helm filters a
directory. Deterministic: same files, same bytes.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Mapping

import pathspec

HELMIGNORE = ".helmignore"


def kept(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """The files `.helmignore` leaves (paths relative to the chart's directory)."""
    ignore = files.get(HELMIGNORE)
    if ignore is None:
        return dict(files)
    spec = pathspec.GitIgnoreSpec.from_lines(ignore.decode("utf-8", "replace").splitlines())
    return {p: b for p, b in files.items() if p != HELMIGNORE and not spec.match_file(p)}


def pack(name: str, files: Mapping[str, bytes]) -> bytes:
    """A gzipped tar of `files` under `name/`."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            data = files[path]
            info = tarfile.TarInfo(f"{name}/{path}")
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=1, mtime=0)
