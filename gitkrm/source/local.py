"""A plain directory (not a Git repository) as a source, for development.

The revision is a hash of the listing (path, mode, blob id), so it moves exactly when a
listed file's content does. Contents are read once per change (a stat cache, as Git's
index, avoids re-reading untouched files) and kept in the snapshot, which stays frozen
while the files change under it. `changes()` reports debounced bursts of edits through
watchfiles, only when they move the revision.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitkrm.errors import BadRequest, NotFound

from .errors import InvalidRevision
from .ignore import (
    DEFAULT_IGNORES,
    IGNORE_FILES,
    IgnoreRules,
    merge_ignore_texts,
    wants_repo_tree,
)
from .snapshot import (
    MODE_EXECUTABLE,
    MODE_FILE,
    MODE_SYMLINK,
    FileEntry,
    MemoryBlobs,
    RepoTree,
    Snapshot,
    git_blob_id,
    listing_revision,
)
from .tree import DEFAULT_MAX_FILE_SIZE, RawEntry, list_repository, list_tree
from .watching import revision_moves

if TYPE_CHECKING:
    import watchfiles


@dataclass(frozen=True, slots=True)
class _Cached:
    stamp: tuple[int, int, int, int]
    blob: str
    content: bytes


class LocalSource:
    """A `WatchedSource` over the directory `root` (or its sub-directory `path`)."""

    def __init__(
        self,
        *,
        name: str,
        root: Path,
        path: str = "",
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        debounce_ms: int = 300,
        ignore_defaults: tuple[str, ...] = DEFAULT_IGNORES,
        repo_tree: bool = False,
        ignore: tuple[str, ...] = (),
    ) -> None:
        parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
        if ".." in parts:
            raise BadRequest(f"source path {path!r} must stay inside {root}")
        self.name = name
        self.repo_root = root  # the boundary of kustomize builds
        self.sub = "/".join(parts)
        self.root = root / self.sub if parts else root
        self.max_file_size = max_file_size
        self.debounce_ms = debounce_ms
        self._defaults = ignore_defaults
        self._ignore = ignore  # the source's own patterns (`spec.ignore`)
        self._repo_tree_always = repo_tree  # see GitSourceSpec.repo_tree
        self._cache: dict[str, _Cached] = {}
        self._stamps: dict[str, tuple[int, int, int, int]] = {}
        self._rules: tuple[frozenset[tuple[str, str]], IgnoreRules] | None = None
        self._last: Snapshot | None = None
        self._tree: RepoTree | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()

    @property
    def last(self) -> Snapshot | None:
        return self._last

    async def poll(self) -> str:
        """The revision the directory is at now (a full stat walk; unchanged files aren't read)."""
        return (await self.snapshot()).revision

    async def snapshot(self) -> Snapshot:
        async with self._lock:
            revision, files, blobs = await asyncio.to_thread(self._scan)
            if self._last is not None and self._last.revision == revision:
                return self._last
            reader = MemoryBlobs(blobs) if self._tree is None else _Blobs(blobs, self.repo_root)
            self._last = Snapshot(revision=revision, files=files, reader=reader, tree=self._tree)
            return self._last

    async def changes(self) -> AsyncIterator[None]:
        """Yield after each debounced burst of edits that moved the revision (or broke it)."""
        seen = self._last.revision if self._last else None
        # A kustomization may read anywhere in the directory: then watch all of it.
        async for _ in revision_moves(
            self.repo_root if self._tree is not None else self.root,
            poll=self.poll,
            seen=seen,
            stop=self._stop,
            watch_filter=_not_vcs,
            debounce=self.debounce_ms,
        ):
            yield None

    async def close(self) -> None:
        self._stop.set()

    # -- scanning (in a worker thread) -------------------------------------------------

    def _scan(self) -> tuple[str, dict[str, FileEntry], dict[str, bytes]]:
        repo = os.path.realpath(self.repo_root)
        if not os.path.isdir(os.path.join(repo, self.sub)):
            raise NotFound(f"source directory {self.root} does not exist")
        sub = self.sub
        prefix = sub + "/" if sub else ""
        entries: dict[str, RawEntry] = {}
        targets: dict[str, str] = {}
        ignore_files = self._ignore_above(repo)
        self._stamps = {}
        self._walk(repo, sub, entries, targets, ignore_files)
        rules = self._rules_for(ignore_files)
        listing = list_tree(
            {p[len(prefix) :]: e for p, e in entries.items()},
            link_targets={p[len(prefix) :]: t for p, t in targets.items()},
            rules=rules,
            prefix=prefix,
            max_file_size=self.max_file_size,
        )
        if listing.causes:
            raw = {p: FileEntry(p, e.ref, e.size, e.mode) for p, e in entries.items()}
            raise InvalidRevision(revision=listing_revision(raw), causes=listing.causes)
        files: dict[str, FileEntry] = {}
        blobs: dict[str, bytes] = {}
        seen: set[str] = set()
        for path, entry in listing.files.items():
            cached = self._read(repo, entry.ref)
            if cached is None:
                continue  # deleted while scanning: the next scan sees the new state
            seen.add(entry.ref)
            files[path] = FileEntry(path, cached.blob, len(cached.content), entry.mode)
            blobs[cached.blob] = cached.content
        revision = listing_revision(files)
        self._tree = None
        if self._repo_tree_always or any(wants_repo_tree(p) for p in files):
            self._tree, revision = self._repo_tree(
                repo, entries, targets, ignore_files, blobs, seen
            )
        for stale in self._cache.keys() - seen:
            del self._cache[stale]
        return revision, files, blobs

    def _repo_tree(
        self,
        repo: str,
        entries: dict[str, RawEntry],
        targets: dict[str, str],
        ignore_files: dict[str, str],
        blobs: dict[str, bytes],
        seen: set[str],
    ) -> tuple[RepoTree, str]:
        """The whole directory for kustomize builds (its ignored directories not walked);
        the revision then hashes it too, so an edit of a base outside the path counts."""
        if self.sub:
            entries, targets, ignore_files = {}, {}, {}
            self._walk(repo, "", entries, targets, ignore_files)
        listed, refused = list_repository(
            entries, link_targets=targets, rules=self._rules_for(ignore_files)
        )
        files: dict[str, FileEntry] = {}
        for path, entry in listed.items():
            stamp = self._stamps.get(entry.ref)
            if stamp is None:
                continue
            cached = self._cache.get(entry.ref)
            if cached is not None and cached.stamp == stamp:
                seen.add(entry.ref)
                files[path] = FileEntry(path, cached.blob, len(cached.content), entry.mode)
                blobs.setdefault(cached.blob, cached.content)
            else:  # read only if a build needs it
                blob = f"{_ON_DISK}{stamp[0]}.{stamp[2]}.{stamp[3]}:{entry.ref}"
                files[path] = FileEntry(path, blob, stamp[2], entry.mode)
        tree = RepoTree(root=self.sub, files=files, refused=refused)
        return tree, listing_revision({**files, "\0source": FileEntry(self.sub, "", 0)})

    def _ignore_above(self, repo: str) -> dict[str, str]:
        """The ignore files of the directories above the source path (repository coordinates)."""
        out: dict[str, str] = {}
        parts = self.sub.split("/") if self.sub else []
        for i in range(len(parts)):
            d = "/".join(parts[:i])
            texts: dict[str, str] = {}
            for name in IGNORE_FILES:
                try:
                    with open(os.path.join(repo, d, name), encoding="utf-8", errors="replace") as f:
                        texts[name] = f.read()
                except OSError:
                    continue
            if texts:
                out[d] = merge_ignore_texts(texts)
        return out

    def _rules_for(self, ignore_files: dict[str, str]) -> IgnoreRules:
        """One rules object while the ignore files stay the same: it remembers answers."""
        key = frozenset(ignore_files.items())
        if self._rules is None or self._rules[0] != key:
            self._rules = (
                key,
                IgnoreRules(ignore_files, defaults=self._defaults, extra=self._ignore),
            )
        return self._rules[1]

    def _walk(
        self,
        root: str,
        rel: str,
        entries: dict[str, RawEntry],
        targets: dict[str, str],
        ignore_files: dict[str, str],
    ) -> None:
        """Entries under `rel` by path from `root`. A directory that the ignore files above
        it (all read by then) exclude is not walked."""
        try:
            items = list(os.scandir(os.path.join(root, rel) if rel else root))
        except (FileNotFoundError, NotADirectoryError):
            return
        texts: dict[str, str] = {}
        subdirs: list[str] = []
        for item in items:
            path = f"{rel}/{item.name}" if rel else item.name
            st = item.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                entries[path] = RawEntry(mode=MODE_SYMLINK, size=0, ref=path)
                targets[path] = _link_target(root, item.path)
            elif stat.S_ISDIR(st.st_mode):
                if item.name != ".git":
                    subdirs.append(path)
            elif stat.S_ISREG(st.st_mode):
                mode = MODE_EXECUTABLE if st.st_mode & 0o111 else MODE_FILE
                entries[path] = RawEntry(mode=mode, size=st.st_size, ref=path)
                self._stamps[path] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
                if item.name in IGNORE_FILES:
                    with open(item.path, encoding="utf-8", errors="replace") as f:
                        texts[item.name] = f.read()
        if texts:
            ignore_files[rel] = merge_ignore_texts(texts)
        rules = self._rules_for(ignore_files) if subdirs else None
        for path in subdirs:
            if rules is None or not rules.dir_ignored(path):
                self._walk(root, path, entries, targets, ignore_files)

    def _read(self, root: str, rel: str) -> _Cached | None:
        """A file's blob, read again only when its stat stamp (taken by the walk) moved."""
        stamp = self._stamps[rel]
        cached = self._cache.get(rel)
        if cached is not None and cached.stamp == stamp:
            return cached
        try:
            with open(os.path.join(root, rel), "rb") as f:
                content = f.read()
        except FileNotFoundError:
            return None
        cached = _Cached(stamp, git_blob_id(content), content)
        self._cache[rel] = cached
        return cached


_ON_DISK = "disk:"  # a blob id of a file of the repository tree not read yet: stamp and path


class _Blobs(MemoryBlobs):
    """Blobs read by the scan, and files of the repository tree read when a build needs
    them (a tree may hold anything: it is not read whole)."""

    __slots__ = ("_root",)

    def __init__(self, blobs: dict[str, bytes], root: Path) -> None:
        super().__init__(blobs)
        self._root = root

    def read_blobs(self, blob_ids: Iterable[str]) -> dict[str, bytes]:
        ids = list(blob_ids)
        out = super().read_blobs(b for b in ids if not b.startswith(_ON_DISK))
        for b in ids:
            if b.startswith(_ON_DISK):
                rel = b.partition(":")[2].partition(":")[2]
                try:
                    out[b] = (self._root / rel).read_bytes()
                except OSError as e:
                    raise NotFound(f"file {rel!r}: {e.strerror or e}") from None
        return out


def _link_target(root: str, link: str) -> str:
    """The link's target, made relative when it is an absolute path inside the root."""
    target = os.readlink(link)
    if not os.path.isabs(target):
        return target.replace(os.sep, "/")
    real = os.path.realpath(target)
    if os.path.commonpath([real, root]) != root:
        return target
    return os.path.relpath(real, os.path.dirname(link)).replace(os.sep, "/")


def _not_vcs(change: watchfiles.Change, path: str) -> bool:
    return f"{os.sep}.git{os.sep}" not in path and not path.endswith(f"{os.sep}.git")
