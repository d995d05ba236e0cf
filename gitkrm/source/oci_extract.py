"""Unpacking an OCI artifact's layer (a tar, gzip-compressed as Flux pushes it) into a
directory, refusing what could write outside it or isn't a manifest file.

Refused, with the entry named: an absolute path or one with a `..` component, a symlink or
hard link whose target leaves the directory, device files and FIFOs, more than
`MAX_ENTRIES` entries or `MAX_UNPACKED` bytes unpacked (a decompression bomb is stopped at
the bound, not after). Links inside the directory are kept (the source's listing then
follows them as it does a repository's). The layer is unpacked into a new directory that
is renamed into place only when complete, so a failed unpack leaves nothing behind.
"""

from __future__ import annotations

import gzip
import io
import os
import posixpath
import shutil
import stat
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Final

from gitkrm.errors import Invalid

MAX_ENTRIES: Final = 50_000
MAX_UNPACKED: Final = 512 * 1024 * 1024


class _Bounded(io.RawIOBase):
    """A stream that fails once more than `limit` bytes have been read from it."""

    def __init__(self, inner: gzip.GzipFile, limit: int, where: str) -> None:
        self._inner, self._left, self._where = inner, limit, where

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._inner.read(len(b))
        self._left -= len(data)
        if self._left < 0:
            raise _refused(self._where, "", f"unpacks to more than {MAX_UNPACKED:,} bytes")
        b[: len(data)] = data
        return len(data)


def _refused(where: str, entry: str, why: str) -> Invalid:
    field = f"entry {entry!r}" if entry else "layer"
    return Invalid(f"{where}: {field}: {why}")


def _inside(name: str) -> str | None:
    """The entry's path relative to the top, or None when it would leave it."""
    if name.startswith("/") or "\\" in name:
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        return None
    return "/".join(parts)


def _link_stays(rel: str, target: str) -> bool:
    if target.startswith("/"):
        return False
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    return joined != ".." and not joined.startswith("../")


def unpack(data: bytes, into: Path, *, where: str) -> None:
    """Unpack the layer `data` (tar or tar+gzip) as the directory `into` (which must not
    exist); `where` names the layer in errors."""
    into.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    work = Path(tempfile.mkdtemp(prefix=".unpack-", dir=into.parent))
    try:
        raw: IO[bytes] = io.BytesIO(data)
        if data[:2] == b"\x1f\x8b":
            raw = io.BufferedReader(_Bounded(gzip.GzipFile(fileobj=raw), MAX_UNPACKED, where))
        _unpack(raw, work, where)
        os.replace(work, into)
    except (tarfile.TarError, EOFError, gzip.BadGzipFile, OSError) as e:
        raise _refused(where, "", f"not a readable tarball: {e}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _unpack(stream: IO[bytes], top: Path, where: str) -> None:
    root = os.path.realpath(top)
    total = 0
    files: dict[str, Path] = {}
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for count, member in enumerate(tar, start=1):
            if count > MAX_ENTRIES:
                raise _refused(where, "", f"has more than {MAX_ENTRIES:,} entries")
            rel = _inside(member.name)
            if rel is None:
                raise _refused(where, member.name, "leaves the artifact (absolute or '..')")
            if not rel:
                continue  # the top directory itself
            dest = top / rel
            parent = os.path.realpath(dest.parent)
            if parent != root and not parent.startswith(root + os.sep):
                raise _refused(where, member.name, "is written through a link leaving the artifact")
            if member.isdir():
                dest.mkdir(parents=True, exist_ok=True, mode=0o755)
            elif member.isreg():
                total += member.size
                if total > MAX_UNPACKED:
                    raise _refused(where, "", f"unpacks to more than {MAX_UNPACKED:,} bytes")
                dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
                source = tar.extractfile(member)
                assert source is not None
                _write(dest, source, executable=bool(member.mode & stat.S_IXUSR))
                files[rel] = dest
            elif member.issym():
                if not _link_stays(rel, member.linkname):
                    raise _refused(
                        where, member.name, f"a symlink to {member.linkname!r} leaves the artifact"
                    )
                dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
                dest.unlink(missing_ok=True)
                os.symlink(member.linkname, dest)
            elif member.islnk():
                target = _inside(member.linkname)
                if target is None or target not in files:
                    raise _refused(
                        where, member.name, f"a hard link to {member.linkname!r}, not a file of it"
                    )
                dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
                shutil.copyfile(files[target], dest)
                files[rel] = dest
            else:
                raise _refused(where, member.name, "a device file or FIFO is not allowed")


def _write(dest: Path, source: IO[bytes], *, executable: bool) -> None:
    dest.unlink(missing_ok=True)  # never write through a link an earlier entry made
    mode = 0o755 if executable else 0o644
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(source, out)
