"""A source whose content is one chart from a chart repository (an HTTP chart repository or
an OCI registry): the `Source` of a chart release (a GitSource with `spec.chart`, a Flux
HelmRelease over a HelmRepository or OCIRepository, an Argo CD Helm Application).

`poll` picks the version the constraint allows now (the repository's `index.yaml`, or the
registry's tags) and fetches the archive when its digest is new (archives are cached by
digest: `repository.ChartFetcher`); the revision is `<version>@<digest>`. The snapshot holds
the chart's files at its root, so the render finds one chart there and renders it as the
source's release. Archives are bounded (entries, sizes) and only regular files are kept.
"""

from __future__ import annotations

import gzip
import io
import posixpath
import tarfile
from typing import Final

from gitkrm.charts.library import ChartError
from gitkrm.charts.repository import ChartFetcher, Dependency, Resolved
from gitkrm.charts.spec import ChartRef
from gitkrm.source.snapshot import FileEntry, MemoryBlobs, Snapshot, git_blob_id

MAX_ENTRIES: Final = 10_000
MAX_UNPACKED: Final = 64 * 1024 * 1024


class ChartRepositorySource:
    """A `Source` (gitkrm.source.protocol) over one chart of a chart repository."""

    def __init__(self, *, name: str, chart: ChartRef, fetcher: ChartFetcher) -> None:
        self.name = name
        self.chart = chart
        self.fetcher = fetcher
        self._last: Snapshot | None = None
        self._resolved: Resolved | None = None

    @property
    def last(self) -> Snapshot | None:
        return self._last

    @property
    def resolved(self) -> Resolved | None:
        """The chart version of the last poll (name, version, archive digest)."""
        return self._resolved

    async def poll(self) -> str | None:
        dep = Dependency(self.chart.name, self.chart.version, self.chart.repository)
        self._resolved = await self.fetcher.fetch(dep, chart=self.chart.name)
        return revision_of(self._resolved)

    async def snapshot(self) -> Snapshot:
        revision = await self.poll()
        assert revision is not None
        assert self._resolved is not None
        if self._last is not None and self._last.revision == revision:
            return self._last
        files = unpack(self._resolved.data, chart=self.chart.name)
        entries = {
            p: FileEntry(path=p, blob=git_blob_id(data), size=len(data))
            for p, data in files.items()
        }
        blobs = MemoryBlobs({e.blob: files[p] for p, e in entries.items()})
        self._last = Snapshot(revision=revision, files=entries, reader=blobs)
        return self._last

    async def close(self) -> None:
        self._last = None


def revision_of(resolved: Resolved) -> str:
    return f"{resolved.version}@{resolved.digest}"


def unpack(data: bytes, *, chart: str) -> dict[str, bytes]:
    """A chart archive's regular files, relative to its top directory (`<name>/`)."""
    out: dict[str, bytes] = {}
    try:
        if data[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
                raw = gz.read(MAX_UNPACKED + 1)  # bounded: no archive bomb
        else:
            raw = data
        if len(raw) > MAX_UNPACKED:
            raise ChartError(
                chart, f"the chart archive unpacks to more than {MAX_UNPACKED:,} bytes"
            )
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
            for i, member in enumerate(tar):
                if i >= MAX_ENTRIES:
                    raise ChartError(chart, f"the chart archive has over {MAX_ENTRIES:,} entries")
                if not member.isfile():
                    continue  # directories, links: never followed
                _, _, rel = member.name.partition("/")
                rel = posixpath.normpath(rel) if rel else ""
                if not rel or rel.startswith(("../", "/")) or rel == "..":
                    continue
                f = tar.extractfile(member)
                if f is None:
                    continue
                out[rel] = f.read()
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ChartError(chart, f"the chart archive can't be read: {e}") from None
    if "Chart.yaml" not in out:
        raise ChartError(chart, "the chart archive has no Chart.yaml")
    return out
