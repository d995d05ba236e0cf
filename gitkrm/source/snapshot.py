"""A frozen view of one revision of a source: the files under its root, readable by blob id.

Entries carry Git blob ids (plain directories compute the same hash), so two snapshots are
compared by id without reading any content, and a renderer can cache parsed files by blob.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from gitkrm.errors import NotFound

MODE_FILE = 0o100644
MODE_EXECUTABLE = 0o100755
MODE_SYMLINK = 0o120000


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file of a snapshot; `path` is posix and relative to the source root."""

    path: str
    blob: str
    size: int
    mode: int = MODE_FILE


@dataclass(frozen=True, slots=True)
class RepoTree:
    """The whole repository as a kustomize build sees it: every file no ignore rule
    excludes (any name), by repository path; `root` is the source's path in it ("" for
    the top). Sources list it only when a kustomization lies under their path, so a
    kustomization may name bases and files anywhere in the repository."""

    root: str
    files: Mapping[str, FileEntry]
    refused: Mapping[str, str] = field(default_factory=dict)  # path -> why not readable


class BlobReader(Protocol):
    """Where a snapshot's contents come from (Git's object database, or memory)."""

    def read_blobs(self, blob_ids: Iterable[str]) -> dict[str, bytes]: ...


def git_blob_id(content: bytes) -> str:
    """The id Git gives `content` as a blob, so plain directories compare like Git trees."""
    h = hashlib.sha1(b"blob %d\0" % len(content), usedforsecurity=False)
    h.update(content)
    return h.hexdigest()


def listing_revision(files: Mapping[str, FileEntry]) -> str:
    """A content hash of a listing (path, mode, blob), the revision of a plain directory."""
    h = hashlib.sha256()
    for path in sorted(files):
        e = files[path]
        h.update(f"{e.mode:o} {e.blob} {path}\0".encode())
    return h.hexdigest()


class Snapshot:
    """One revision: `revision` (a commit sha, or a listing hash) and its files by path.

    Reading is synchronous and cheap (one `git cat-file` process or memory); callers in an
    event loop that read thousands of files at once may hand `read_many` to a thread.
    """

    __slots__ = ("_reader", "allow_prune", "files", "ref", "revision", "tree")

    def __init__(
        self,
        *,
        revision: str,
        files: Mapping[str, FileEntry],
        reader: BlobReader,
        tree: RepoTree | None = None,
        allow_prune: int | None = None,
        ref: str | None = None,
    ) -> None:
        """`allow_prune`: the commit's `Gitkrm-Allow-Prune` trailer (`source.trailers`),
        how many prunes its author approved beyond the source's budget; `ref`: the tag a
        semver range resolved to (None for other refs: the source's own names them)."""
        self.revision = revision
        self.ref = ref
        self.allow_prune = allow_prune
        self.files: Mapping[str, FileEntry] = MappingProxyType(dict(files))
        self._reader = reader
        self.tree = tree

    def __repr__(self) -> str:
        return f"Snapshot(revision={self.revision[:12]!r}, files={len(self.files)})"

    def at_ref(self, ref: str | None) -> Snapshot:
        """The same files under another resolved ref (a new tag on the same commit)."""
        return self.relabel(revision=self.revision, ref=ref)

    def relabel(self, *, revision: str, ref: str | None) -> Snapshot:
        """The same files under another revision name (an OCI artifact's digest names the
        directory it was unpacked into)."""
        return Snapshot(
            revision=revision, files=self.files, reader=self._reader, tree=self.tree,
            allow_prune=self.allow_prune, ref=ref,
        )  # fmt: skip

    def _entry(self, path: str) -> FileEntry:
        try:
            return self.files[path]
        except KeyError:
            raise NotFound(f"file {path!r} is not in revision {self.revision[:12]}") from None

    def read(self, path: str) -> bytes:
        """The content of one file of this snapshot."""
        entry = self._entry(path)
        return self._reader.read_blobs((entry.blob,))[entry.blob]

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes]:
        """Contents of many files in one pass over the object database."""
        entries = [self._entry(p) for p in paths]
        blobs = self._reader.read_blobs({e.blob for e in entries})
        return {e.path: blobs[e.blob] for e in entries}

    def read_tree(self, paths: Iterable[str]) -> dict[str, bytes]:
        """Contents of files of the repository tree, by repository path."""
        if self.tree is None:
            return self.read_many(paths)
        files = self.tree.files
        try:
            entries = [(p, files[p]) for p in paths]
        except KeyError as e:
            raise NotFound(f"file {e.args[0]!r} is not in revision {self.revision[:12]}") from None
        blobs = self._reader.read_blobs({e.blob for _, e in entries})
        return {p: blobs[e.blob] for p, e in entries}

    def changed_paths(self, previous: Snapshot | None) -> set[str]:
        """Paths added, removed or changed (by blob id or mode) since `previous`."""
        if previous is None:
            return set(self.files)
        old = previous.files
        changed = {p for p, e in self.files.items() if old.get(p) != e}
        changed.update(p for p in old if p not in self.files)
        return changed


class MemoryBlobs:
    """Blob contents held in memory: a plain directory's files as read when listed."""

    __slots__ = ("_blobs",)

    def __init__(self, blobs: Mapping[str, bytes]) -> None:
        self._blobs = dict(blobs)

    def read_blobs(self, blob_ids: Iterable[str]) -> dict[str, bytes]:
        try:
            return {b: self._blobs[b] for b in blob_ids}
        except KeyError as e:
            raise NotFound(f"blob {e.args[0]} is not in this snapshot") from None
