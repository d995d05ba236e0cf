"""A renderer's parsed files, cached by content across revisions.

Manifest files are cached by blob id (and format), kustomize builds by the blob ids of
their input tree (and the post-build digest when inputs may decrypt), so a commit that
changes one file parses one file. Entries unused for a render are kept for one more (a
`git revert` finds the previous blobs), then dropped. With a `ParseCache` the parsed
files are also kept on disk, so a new process parses only the blobs no earlier one
parsed. Files are parsed in worker processes when it pays off (`pool.parse_many`).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence

from gitkrm.errors import BadRequest
from gitkrm.source.snapshot import FileEntry, Snapshot
from gitkrm.sync import kustomize, kustomize_sops
from gitkrm.sync.cache import GenerationCache
from gitkrm.sync.parse import FileError, ParseContext, ParsedFile, builtin_registry, parse_file
from gitkrm.sync.parsecache import ParseCache
from gitkrm.sync.pool import parse_many
from gitkrm.sync.postbuild import PostBuild

_THREAD_READ_ABOVE = 64  # files; fewer are read on the loop (one cat-file round trip)

Early = Callable[[str, str, ParsedFile], None]  # path, blob, parsed file


def _parse_key(path: str, entry: FileEntry) -> str:
    """Parsed files are cached by blob (and by format: the same bytes as .json parse
    differently)."""
    return entry.blob + ":json" if path.endswith(".json") else entry.blob


class ParsedFiles:
    """The parsed files of one source's renders (see the module docstring)."""

    def __init__(self, *, context: ParseContext, disk: ParseCache | None = None) -> None:
        self._context = context
        self._files: GenerationCache[str, ParsedFile] = GenerationCache()
        self._built: GenerationCache[str, ParsedFile] = GenerationCache()  # and generated
        # Parsed files on disk: read once, by the first render that misses in memory.
        self._disk = disk
        self._disk_entries: dict[str, ParsedFile] | None = None
        self._used: dict[str, ParsedFile] = {}  # this render's parsed files, by key
        self.parsed = 0
        """Files the render under way parsed (found in no cache)."""

    async def parse(
        self, snapshot: Snapshot, entries: Mapping[str, tuple[str, FileEntry]], *, early: Early
    ) -> tuple[dict[str, ParsedFile], float]:
        """Each entry's parsed file (path -> (path read, entry read)), and the time spent
        reading blobs; `early` hears each file parsed while workers parse the rest."""
        self.parsed = 0
        out: dict[str, ParsedFile] = {}
        todo: list[str] = []
        cache = self._files
        for path, (_, entry) in entries.items():
            hit = cache.get(_parse_key(path, entry))
            if hit is None:
                todo.append(path)
            else:
                out[path] = hit
        if self._disk is not None:
            todo = self._from_disk(todo, entries, out)
            self._used = {_parse_key(p, e): out[p] for p, (_, e) in entries.items() if p in out}
        if not todo:
            return out, 0.0
        self.parsed = len(todo)
        t = time.perf_counter()
        sources = {entries[p][0] for p in todo}
        if len(sources) > _THREAD_READ_ABOVE:
            contents = await asyncio.to_thread(snapshot.read_many, sources)
        else:
            contents = snapshot.read_many(sources)
        read_ms = (time.perf_counter() - t) * 1000

        def on_chunk(items: Sequence[tuple[str, bytes]], parsed: Sequence[ParsedFile]) -> None:
            for (path, _), pf in zip(items, parsed, strict=True):
                early(path, entries[path][1].blob, pf)

        results = await parse_many(
            [(p, contents[entries[p][0]]) for p in todo], self._context, on_chunk=on_chunk
        )
        for path, pf in zip(todo, results, strict=True):
            key = _parse_key(path, entries[path][1])
            self._files.put(key, pf)
            if self._disk is not None:
                self._used[key] = pf
            out[path] = pf
        return out, read_ms

    def _from_disk(
        self,
        todo: list[str],
        entries: Mapping[str, tuple[str, FileEntry]],
        out: dict[str, ParsedFile],
    ) -> list[str]:
        """Take what the disk cache has of `todo` (into `out` and memory); the rest."""
        if not todo:
            return todo
        if self._disk_entries is None:
            assert self._disk is not None
            self._disk_entries = self._disk.load(self._context)
        stored = self._disk_entries
        if not stored:
            return todo
        rest: list[str] = []
        for path in todo:
            key = _parse_key(path, entries[path][1])
            hit = stored.get(key)
            if hit is None:
                rest.append(path)
            else:
                self._files.put(key, hit)
                out[path] = hit
        return rest

    async def kustomize(
        self,
        snapshot: Snapshot,
        root: str,
        kpath: str,
        layout: kustomize.Layout,
        postbuild: PostBuild | None,
        *,
        root_only: bool,
    ) -> tuple[ParsedFile, str, float]:
        """The build of the kustomization at `root` (shown as `kpath`) parsed, its cache
        key and the time spent reading its inputs (`root_only`: Argo CD's load rules)."""
        files = snapshot.tree.files if snapshot.tree is not None else snapshot.files
        needed = sorted(layout.needs[root])
        key = kustomize.tree_key(root, ((p, files[p].blob) for p in needed))
        if postbuild is not None and postbuild.decrypt:  # inputs may decrypt (kustomize_sops)
            key += ":" + postbuild.digest
        hit = self._built.get(key)
        if hit is not None:
            return hit, key, 0.0
        t = time.perf_counter()
        contents = snapshot.read_tree(needed)
        read_ms = (time.perf_counter() - t) * 1000
        try:
            out = await kustomize_sops.build(root, contents, postbuild, root_only=root_only)
        except BadRequest as e:
            pf = ParsedFile(error=FileError(None, None, e.message))
        else:
            pf = parse_file(kpath, out, ctx=self._context, registry=builtin_registry())
            # Lines of kustomize's output mean nothing in the repository; the object does.
            pf = ParsedFile(
                objects=tuple(po._replace(line=0) for po in pf.objects),
                error=None if pf.error is None else pf.error._replace(line=None),
                deferred=pf.deferred,
                text=pf.text,
            )
        self._built.put(key, pf)
        return pf, key, read_ms

    def generated(self, path: str, data: bytes) -> tuple[str, ParsedFile]:
        """A manifest gitkrm writes itself (Argo CD's CreateNamespace), parsed once per
        content: its cache key and parsed file."""
        key = hashlib.sha256(data).hexdigest()
        pf = self._built.get(key)
        if pf is None:
            pf = parse_file(path, data, ctx=self._context, registry=builtin_registry())
            self._built.put(key, pf)
        return key, pf

    def finish(self) -> None:
        """End of a render: forget what recent renders did not use, and keep what this
        one parsed on disk."""
        self._files.rotate()
        self._built.rotate()
        if self._disk is not None:
            if self.parsed:
                self._disk.save(self._context, self._used)
            self._used = {}
            self._disk_entries = {}  # what it held is in memory now, for two renders
