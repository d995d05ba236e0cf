"""An OCI artifact as a source (Flux's OCIRepository, "gitless GitOps").

`poll` resolves the reference as source-controller does, digest before semver before tag
(the highest tag of the repository the range allows, listed at every poll, so a tag
pushed later is taken at the next one) and reads the manifest; its digest is the revision,
in Flux's form: `<tag>@sha256:<hex>` (`sha256:<hex>` for a digest pin). The selected
layer (the first of `layerSelector.mediaType`, or the first layer) is fetched, verified
and unpacked (`oci_extract`) into a directory named by the layer's digest under the cache
only when that directory is not there yet: an unchanged artifact is neither pulled nor
unpacked again, and an unchanged manifest digest not even listed again. The snapshot is
that directory read as a plain directory (`LocalSource`: ignore files, symlinks confined,
file sizes bounded) at `path`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from gitkrm.errors import Invalid, NotFound

from .errors import PathNotFound
from .local import LocalSource
from .oci import FLUX_CONTENT, Client, Credentials, Layer, Manifest, Repository
from .semver import newest
from .snapshot import Snapshot
from .sweep import sweep, touch

MAX_LAYER: Final = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class OciArtifact:
    """What to pull: `url` (`oci://host/name`) at `digest`, else the highest tag `semver`
    allows (tags matching `semver_filter` only), else `tag`."""

    url: str
    tag: str = "latest"
    semver: str | None = None
    semver_filter: str | None = None
    digest: str | None = None
    media_type: str | None = None  # layerSelector.mediaType; None: the first layer
    insecure: bool = False
    credentials: Credentials | None = field(default=None, repr=False)
    ca_data: str | None = field(default=None, repr=False)
    timeout: float | None = None
    removed: bool = False
    """The OCIRepository is gone (removed with its Kustomization): the artifact is not read
    again (`PathNotFound`), its child only prunes what it applied."""

    @property
    def repository(self) -> Repository:
        return Repository.parse(self.url, insecure=self.insecure)


@dataclass(frozen=True, slots=True)
class Resolved:
    tag: str | None
    manifest: Manifest

    @property
    def revision(self) -> str:
        digest = self.manifest.digest
        return f"{self.tag}@{digest}" if self.tag else digest


def pick_layer(manifest: Manifest, media_type: str | None, *, where: str) -> Layer:
    """source-controller's choice: the first layer of the media type asked for, or the
    first layer."""
    for layer in manifest.layers:
        if media_type is None or layer.media_type == media_type:
            return layer
    if media_type is None:
        raise Invalid(f"{where}: the artifact has no layers")
    found = ", ".join(sorted({x.media_type for x in manifest.layers})) or "none"
    raise Invalid(f"{where}: no layer with media type {media_type!r} (layers: {found})")


class OciSource:
    """A `Source` over one OCI artifact, unpacked under `cache_dir`, seen at `path`."""

    def __init__(
        self,
        *,
        name: str,
        artifact: OciArtifact,
        cache_dir: Path,
        path: str = "",
        repo_tree: bool = False,
        ignore: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.ignore = ignore  # the OCIRepository's spec.ignore lines
        self.artifact = artifact
        self.cache_dir = cache_dir
        self.path = path
        self.repo_tree = repo_tree
        self.pulls = 0  # layers fetched and unpacked (an unchanged artifact adds none)
        self._resolved: Resolved | None = None
        self._local: tuple[Path, LocalSource] | None = None
        self._last: Snapshot | None = None
        self._lock = asyncio.Lock()

    @property
    def last(self) -> Snapshot | None:
        return self._last

    @property
    def resolved(self) -> Resolved | None:
        return self._resolved

    def _client(self) -> Client:
        a = self.artifact
        kw = {} if a.timeout is None else {"timeout": a.timeout}
        return Client(a.repository, credentials=a.credentials, ca_data=a.ca_data, **kw)

    async def _resolve(self, client: Client) -> Resolved:
        a = self.artifact
        if a.digest:
            return Resolved(None, await client.manifest(a.digest))
        tag = a.tag
        if a.semver:
            tags = await client.tags()
            if a.semver_filter:
                import re

                pattern = re.compile(a.semver_filter)
                tags = [t for t in tags if pattern.search(t)]
            found = newest(tags, a.semver)
            if found is None:
                raise NotFound(
                    f"no match found for semver: {a.semver} (no tag of {a.url} satisfies it)"
                )
            tag = found
        return Resolved(tag, await client.manifest(tag))

    async def poll(self) -> str:
        self._refuse_removed()
        async with self._client() as client:
            self._resolved = await self._resolve(client)
        return self._resolved.revision

    def _refuse_removed(self) -> None:
        if self.artifact.removed:
            raise PathNotFound(
                revision=self.artifact.url, path=self.path or ".",
                what="is not read: its OCIRepository was removed",
            )  # fmt: skip

    async def snapshot(self) -> Snapshot:
        self._refuse_removed()
        async with self._lock, self._client() as client:
            resolved = await self._resolve(client)
            self._resolved = resolved
            last = self._last
            if last is not None and last.revision == resolved.revision:
                if self._local is not None:
                    touch(self._local[0])
                return last
            where = f"{self.artifact.url}@{resolved.manifest.digest}"
            layer = pick_layer(resolved.manifest, self.artifact.media_type, where=where)
            directory = self.cache_dir / layer.digest.replace(":", "-")
            if not directory.is_dir():
                data = await client.blob(layer, limit=MAX_LAYER)
                from .oci_extract import unpack

                await asyncio.to_thread(unpack, data, directory, where=where)
                self.pulls += 1
                sweep(self.cache_dir, keep=directory)
            else:
                touch(directory)
        if self._local is None or self._local[0] != directory:
            self._local = (
                directory,
                LocalSource(
                    name=self.name,
                    root=directory,
                    path=self.path,
                    repo_tree=self.repo_tree,
                    ignore=self.ignore,
                ),
            )
        snap = await self._local[1].snapshot()
        ref = resolved.tag if self.artifact.semver and not self.artifact.digest else None
        self._last = snap.relabel(revision=resolved.revision, ref=ref)
        return self._last

    async def close(self) -> None:
        if self._local is not None:
            await self._local[1].close()


__all__ = ["FLUX_CONTENT", "OciArtifact", "OciSource", "Resolved", "pick_layer"]
