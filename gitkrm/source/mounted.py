"""A source with other sources mounted under prefixes: Argo CD's multi-source Application,
whose Helm source reads value files of another repository as `$<ref>/<path>`.

The snapshot is the main source's files plus each mounted source's files under
`$<name>/`; contents come from the source that owns the path. The revision names every
part (`<main>+<name>:<revision>`), so a commit to the values repository is a new revision
of the whole. Nothing of a mounted repository is read but what the render asks for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .protocol import Source
from .snapshot import FileEntry, Snapshot


class _Readers:
    """Blob contents from the snapshot that lists each blob (ids may repeat: same bytes)."""

    def __init__(self, parts: Iterable[Snapshot]) -> None:
        self._where: dict[str, tuple[Snapshot, str]] = {}
        for snap in parts:
            for path, entry in snap.files.items():
                self._where.setdefault(entry.blob, (snap, path))

    def read_blobs(self, blob_ids: Iterable[str]) -> dict[str, bytes]:
        by_snap: dict[int, tuple[Snapshot, dict[str, str]]] = {}
        for blob in blob_ids:
            snap, path = self._where[blob]
            by_snap.setdefault(id(snap), (snap, {}))[1][blob] = path
        out: dict[str, bytes] = {}
        for snap, paths in by_snap.values():
            got = snap.read_many(paths.values())
            out.update({blob: got[p] for blob, p in paths.items()})
        return out


class MountedSource:
    """A `Source`: `main` with `mounts` (name -> source) under `$<name>/`."""

    def __init__(self, *, main: Source, mounts: Mapping[str, Source]) -> None:
        self.name = main.name
        self.main = main
        self.mounts = dict(mounts)
        self._last: Snapshot | None = None

    @property
    def last(self) -> Snapshot | None:
        return self._last

    async def poll(self) -> str | None:
        parts = [await self.main.poll()]
        for source in self.mounts.values():
            parts.append(await source.poll())
        if any(p is None for p in parts):
            return None
        return _revision(parts[0] or "", zip(self.mounts, parts[1:], strict=True))

    async def snapshot(self) -> Snapshot:
        main = await self.main.snapshot()
        mounted = {name: await s.snapshot() for name, s in self.mounts.items()}
        revision = _revision(main.revision, ((n, s.revision) for n, s in mounted.items()))
        if self._last is not None and self._last.revision == revision:
            return self._last
        files: dict[str, FileEntry] = dict(main.files)
        for name, snap in mounted.items():
            for path, entry in snap.files.items():
                at = f"${name}/{path}"
                files[at] = FileEntry(path=at, blob=entry.blob, size=entry.size, mode=entry.mode)
        reader = _Readers([main, *mounted.values()])
        self._last = Snapshot(revision=revision, files=files, reader=reader)
        return self._last

    async def close(self) -> None:
        await self.main.close()
        for source in self.mounts.values():
            await source.close()


def _revision(main: str, mounts: Iterable[tuple[str, str | None]]) -> str:
    return "+".join([main, *(f"{name}:{rev}" for name, rev in mounts)])
