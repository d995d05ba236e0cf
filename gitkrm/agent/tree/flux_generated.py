"""The `ExternalArtifact` objects an ArtifactGenerator makes, as the content of a source.

An ArtifactGenerator's child source syncs one `ExternalArtifact` per artifact (what
source-watcher applies): `spec.sourceRef` naming the generator, the generator's
`commonMetadata`, the label `source.extensions.fluxcd.io/generator: <uid>`, and the
artifact's revision, digest, size and origin revision as `gitkrm.io/artifact-*`
annotations, from which the generator's interpreter writes each object's
`status.artifact` (`flux_generator`). The objects are generated from the repository's
snapshot (`gitkrm.source.artifact.compose`); the revision is a digest of them, so a commit
that changes no artifact (and no origin revision) changes nothing. An artifact removed
from the generator is pruned with its object.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

from gitkrm.errors import BadRequest
from gitkrm.source import FileEntry, Snapshot, Source
from gitkrm.source.artifact import compose, moved
from gitkrm.source.artifact_copy import ArtifactRecipe
from gitkrm.source.snapshot import MemoryBlobs, git_blob_id

from .flux_spec import ARTIFACT_GENERATOR, EXTERNAL_ARTIFACT, SOURCE_GROUP

GENERATOR_LABEL: Final = "source.extensions.fluxcd.io/generator"
REVISION: Final = "gitkrm.io/artifact-revision"
DIGEST: Final = "gitkrm.io/artifact-digest"
SIZE: Final = "gitkrm.io/artifact-size"
ORIGIN: Final = "gitkrm.io/artifact-origin-revision"
ORIGIN_METADATA: Final = "org.opencontainers.image.revision"


@dataclass(frozen=True, slots=True)
class GeneratedArtifacts:
    """What a generator's child makes: the generator's identity, its recipes, which
    artifacts record their origin revision, and the metadata every object carries."""

    namespace: str
    name: str
    uid: str
    recipes: tuple[ArtifactRecipe, ...]
    origin: tuple[str, ...] = ()
    ref_name: str = ""
    """The branch or tag the repository is read at (Flux's `main@sha1:<sha>`)."""
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()


def origin_revision(sha: str, ref_name: str) -> str:
    return f"{ref_name}@sha1:{sha}" if ref_name else f"sha1:{sha}"


class MadeSource:
    """A `Source` whose files `make` makes of the snapshots of `repository` (the whole
    repository, its tree listed); its revision is a digest of them, so a commit that
    changes none of them changes nothing."""

    def __init__(self, *, name: str, repository: Source) -> None:
        self.name = name
        self.repository = repository
        self._origin: str | None = None
        self._last: Snapshot | None = None

    @property
    def last(self) -> Snapshot | None:
        return self._last

    def make(self, repo: Snapshot) -> dict[str, bytes]:
        """The files (path -> content) of this source at the repository's `repo`."""
        raise NotImplementedError

    async def poll(self) -> str | None:
        return (await self.snapshot()).revision

    async def prepare(self) -> None:
        """Before a snapshot: bring what `make` reads besides the repository up to date."""

    def origin(self, repo: Snapshot) -> str:
        """What the files are made of: the repository's revision (and what else `make`
        reads); the same origin makes the same files."""
        return repo.revision

    async def made(self, repo: Snapshot) -> dict[str, bytes]:
        """`make`, and any I/O it needs (none here)."""
        return self.make(repo)

    async def snapshot(self) -> Snapshot:
        await self.prepare()
        repo = await self.repository.snapshot()
        if self._last is not None and self._origin == self.origin(repo):
            return self._last
        files = await self.made(repo)
        h = hashlib.sha256()
        for path in sorted(files):
            h.update(path.encode() + b"\0" + files[path] + b"\0")
        blobs = {git_blob_id(c): c for c in files.values()}
        entries = {p: FileEntry(p, git_blob_id(c), len(c)) for p, c in files.items()}
        revision = f"sha256:{h.hexdigest()}"
        self._origin = self.origin(repo)
        if self._last is None or self._last.revision != revision:
            self._last = Snapshot(revision=revision, files=entries, reader=MemoryBlobs(blobs))
        return self._last

    async def changes(self) -> AsyncIterator[None]:
        """A change of a local repository that changes what is made (`artifact.moved`)."""
        async for _ in moved(self, self.repository):
            yield None

    async def close(self) -> None:
        await self.repository.close()


class GeneratedSource(MadeSource):
    """One ExternalArtifact manifest per artifact of `spec`."""

    def __init__(self, *, name: str, repository: Source, spec: GeneratedArtifacts) -> None:
        super().__init__(name=name, repository=repository)
        self.spec = spec
        self.details: Mapping[str, str] = {}
        """Artifact name -> digest, of the last snapshot (the generator's inventory)."""

    def make(self, repo: Snapshot) -> dict[str, bytes]:
        files: dict[str, bytes] = {}
        details: dict[str, str] = {}
        origin = origin_revision(repo.revision, self.spec.ref_name)
        for recipe in self.spec.recipes:
            try:
                built = compose(repo, recipe)
            except BadRequest as e:
                raise BadRequest(f"artifact {recipe.name}: {e.message}") from None
            details[recipe.name] = built.digest
            revision = origin if recipe.pinned else built.revision
            obj = self._object(recipe.name, revision, built.digest, built.size, origin)
            files[f"{recipe.name}.yaml"] = yaml.safe_dump(obj, sort_keys=False).encode()
        self.details = details
        return files

    def _object(self, name: str, revision: str, digest: str, size: int, origin: str) -> Any:
        spec = self.spec
        annotations = dict(spec.annotations)
        annotations |= {REVISION: revision, DIGEST: digest, SIZE: str(size)}
        if name in spec.origin:
            annotations[ORIGIN] = origin
        return {
            "apiVersion": f"{SOURCE_GROUP}/v1",
            "kind": EXTERNAL_ARTIFACT.kind,
            "metadata": {
                "name": name,
                "namespace": spec.namespace,
                "labels": {**dict(spec.labels), GENERATOR_LABEL: spec.uid or spec.name},
                "annotations": annotations,
            },
            "spec": {
                "sourceRef": {
                    "apiVersion": f"{ARTIFACT_GENERATOR.group}/v1beta1",
                    "kind": ARTIFACT_GENERATOR.kind,
                    "name": spec.name,
                    "namespace": spec.namespace,
                }
            },
        }
