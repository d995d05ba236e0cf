"""Parsed files kept on disk, so a new process parses only blobs no earlier one parsed.

The renderer caches parsed files by Git blob id in memory; this is the same cache across
processes (a `run --once`, a `diff`, a restarted agent): one file per source in the state
dir (`cache/parsed/<source>.bin`), read whole on the first render that needs it.

The file holds a header (a magic, the fingerprint of what parsing depends on: this
format's number, gitkrm's version, Python's (the payload is `marshal`ed, the fastest to
load: about 20 ms for W10k's 10,000 objects) and the parse settings; then a CRC-32 of the
payload) and the payload: key -> (used by the render that wrote the file, parsed file as
plain tuples). It is written by a render that parsed something, with the entries that
render used and those the render before it used (a `git revert` finds the previous
blobs); older ones are dropped, and a payload over `MAX_BYTES` keeps this render's only.

Anything unreadable (no file, another version, a damaged or foreign file) is an empty
cache: the next render parses and writes it again; a failed write is logged at debug and
forgotten. Files are written atomically (a temporary file renamed) with mode 0600 in a
0700 directory: parsed Secrets hold their data, as `store.db` next to them does.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import marshal
import os
import sys
import tempfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from gitkrm import __version__
from gitkrm.sync.parse import FileError, ParseContext, ParsedFile, ParsedObject

log = logging.getLogger(__name__)

FORMAT: Final = 3
"""Bump when parsing gives other results for the same bytes (or the payload changes)."""
MAGIC: Final = b"gitkrm-parsed\n"
MAX_BYTES: Final = 512 * 1024 * 1024
_HEADER: Final = len(MAGIC) + 32 + 4

_Plain = tuple[tuple[tuple[Any, ...], ...], tuple[Any, ...] | None, bool, str | None]


def fingerprint(context: ParseContext) -> bytes:
    """What a parsed file depends on besides its bytes (32 bytes)."""
    text = f"{FORMAT}\0{__version__}\0{sys.version}\0{context!r}"
    return hashlib.sha256(text.encode()).digest()


def _plain(pf: ParsedFile) -> _Plain:
    err = None if pf.error is None else tuple(pf.error)
    return (tuple(tuple(po) for po in pf.objects), err, pf.deferred, pf.text)


def _parsed(value: Any) -> ParsedFile:
    objects, err, deferred, text = value
    make = ParsedObject._make
    return ParsedFile(
        tuple([make(o) for o in objects]),
        None if err is None else FileError._make(err),
        bool(deferred),
        text,
    )


class ParseCache:
    """One source's parsed files on disk (see the module docstring). `read_only`: never
    written (`gitkrm diff` uses the cache and leaves the state dir as it was)."""

    def __init__(self, path: Path, *, read_only: bool = False, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.read_only = read_only
        self.max_bytes = max_bytes
        self._current: Mapping[str, ParsedFile] = {}  # used by the render that wrote the file

    def load(self, context: ParseContext) -> dict[str, ParsedFile]:
        """Every entry of the file ({} when there is none or it can't be used)."""
        try:
            data = self.path.read_bytes()
        except OSError:
            return {}
        out: dict[str, ParsedFile] = {}
        current: dict[str, ParsedFile] = {}
        try:
            for key, (used, value) in self._decode(data, fingerprint(context)).items():
                pf = out[key] = _parsed(value)
                if used:
                    current[key] = pf
        except Exception as e:
            log.debug("parse cache %s not used: %s", self.path, e)
            return {}
        self._current = current
        return out

    @staticmethod
    def _decode(data: bytes, fp: bytes) -> dict[str, tuple[bool, Any]]:
        if not data.startswith(MAGIC):
            raise ValueError("not a parse cache")
        if data[len(MAGIC) : len(MAGIC) + 32] != fp:
            raise ValueError("written by another version or for other parse settings")
        payload = memoryview(data)[_HEADER:]
        if zlib.crc32(payload) != int.from_bytes(data[_HEADER - 4 : _HEADER], "big"):
            raise ValueError("damaged (checksum)")
        entries = marshal.loads(payload)
        if not isinstance(entries, dict):
            raise ValueError("damaged (payload)")
        return entries

    def save(self, context: ParseContext, used: Mapping[str, ParsedFile]) -> None:
        """Write the entries `used` by this render, and those of the render that wrote the
        file before (unless that makes it too big)."""
        if self.read_only:
            return
        entries: dict[str, tuple[bool, _Plain]] = {k: (True, _plain(v)) for k, v in used.items()}
        payload = marshal.dumps(entries)
        older = {k: (False, _plain(v)) for k, v in self._current.items() if k not in used}
        if older:
            entries.update(older)
            both = marshal.dumps(entries)
            if len(both) <= self.max_bytes:
                payload = both
        self._current = used
        if len(payload) > self.max_bytes:
            self.discard()
            return
        header = MAGIC + fingerprint(context) + zlib.crc32(payload).to_bytes(4, "big")
        try:
            write_private(self.path, header, payload)
        except OSError as e:
            log.debug("parse cache %s not written: %s", self.path, e)

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()


def write_private(path: Path, *parts: bytes) -> None:
    """Write a file atomically, readable by its owner only; directories it needs are
    made accessible to their owner only."""
    missing = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:  # mkstemp makes it 0600
            for part in parts:
                f.write(part)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
