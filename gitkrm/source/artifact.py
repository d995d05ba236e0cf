"""A Flux `ExternalArtifact` an ArtifactGenerator makes of a Git repository, as a source.

The repository is read as any Git source (its whole tree, ignore files and symlink rules
applied: a link leaving the repository is never followed, files over the size bound are
refused); the artifact is the generator's copy operations over that listing
(`artifact_copy.build`): artifact paths mapped to the repository's blobs, nothing copied
or re-read. The revision is the artifact's, `latest@sha256:<digest>` (or the one
`revision: "@alias"` names), so a commit that changes no file of the artifact is the same
revision: the child has nothing to do, renders nothing. The snapshot is the artifact's
files under `path`, with the whole artifact as the tree kustomize builds may read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass

from gitkrm.errors import GitkrmError, NotFound

from .artifact_copy import ArtifactRecipe, Built, build
from .errors import PathNotFound
from .ignore import IgnoreRules, select
from .protocol import Source
from .snapshot import FileEntry, RepoTree, Snapshot

_NO_RULES = IgnoreRules({}, defaults=())


@dataclass(frozen=True, slots=True)
class Composed:
    """An artifact built from one revision of the repository."""

    origin: str  # the repository's revision (a commit sha)
    built: Built


class _Blobs:
    """The repository's blobs, and the contents a `Merge` made."""

    __slots__ = ("_made", "_snap")

    def __init__(self, snap: Snapshot, made: Mapping[str, bytes]) -> None:
        self._snap = snap
        self._made = made

    def read_blobs(self, blob_ids: Iterable[str]) -> dict[str, bytes]:
        ids = list(blob_ids)
        out = {b: self._made[b] for b in ids if b in self._made}
        rest = [b for b in ids if b not in self._made]
        if rest:
            out.update(_read_repo(self._snap, rest))
        return out


def _read_repo(snap: Snapshot, blob_ids: Iterable[str]) -> dict[str, bytes]:
    tree = snap.tree
    if tree is None:
        return snap.read_many(_paths_of(snap.files, blob_ids))
    by_blob = {e.blob: p for p, e in tree.files.items()}
    try:
        paths = [by_blob[b] for b in blob_ids]
    except KeyError as e:
        raise NotFound(f"blob {e.args[0]} is not in revision {snap.revision[:12]}") from None
    got = snap.read_tree(paths)
    return {tree.files[p].blob: data for p, data in got.items()}


def _paths_of(files: Mapping[str, FileEntry], blob_ids: Iterable[str]) -> list[str]:
    by_blob = {e.blob: p for p, e in files.items()}
    return [by_blob[b] for b in blob_ids]


def compose(snap: Snapshot, recipe: ArtifactRecipe) -> Built:
    """The artifact `recipe` makes of the repository snapshot `snap` (its whole tree)."""
    files = snap.tree.files if snap.tree is not None else snap.files
    return build(recipe, files, lambda ids: _read_repo(snap, ids))


class ArtifactSource:
    """A `Source`: the artifact `recipe` makes of `repository` (a source of the whole
    repository, listing its tree), seen at `path`."""

    def __init__(
        self, *, name: str, repository: Source, recipe: ArtifactRecipe, path: str = ""
    ) -> None:
        self.name = name
        self.repository = repository
        self.recipe = recipe
        self.path = path.strip("/")
        self.composed: Composed | None = None
        self._last: Snapshot | None = None

    @property
    def last(self) -> Snapshot | None:
        return self._last

    async def poll(self) -> str | None:
        """The artifact's revision now: composing it costs a listing, read only when the
        repository moved (the repository source returns the same snapshot otherwise)."""
        return (await self.snapshot()).revision

    def _revision(self, composed: Composed) -> str:
        return composed.origin if self.recipe.pinned else composed.built.revision

    async def snapshot(self) -> Snapshot:
        repo = await self.repository.snapshot()
        composed = self.composed
        if composed is None or composed.origin != repo.revision:
            composed = Composed(origin=repo.revision, built=compose(repo, self.recipe))
            self.composed = composed
        revision = self._revision(composed)
        if self._last is not None and self._last.revision == revision:
            return self._last
        built = composed.built
        prefix = self.path + "/" if self.path else ""
        under = [p for p in built.files if p.startswith(prefix)]
        if not under:
            raise PathNotFound(revision=revision, path=self.path, what="is not in the artifact")
        picked = select([p[len(prefix) :] for p in under], _NO_RULES)
        files = {
            p: FileEntry(p, built.files[prefix + p].blob, built.files[prefix + p].size,
                         built.files[prefix + p].mode)
            for p in picked
        }  # fmt: skip
        tree = RepoTree(root=self.path, files=built.files)
        self._last = Snapshot(
            revision=revision, files=files, reader=_Blobs(repo, built.made), tree=tree
        )
        return self._last

    async def changes(self) -> AsyncIterator[None]:
        """When the repository is on this machine (it can tell when it changed): yield
        after a change that moves the artifact's revision, never for one that does not."""
        async for _ in moved(self, self.repository):
            yield None

    async def close(self) -> None:
        await self.repository.close()


async def moved(source: Source, repository: Source) -> AsyncIterator[None]:
    """`source`'s own changes, from those of the `repository` it is made of: a change of
    the repository that leaves `source`'s revision as it was is not one."""
    inner = getattr(repository, "changes", None)
    if inner is None:
        return
    seen = source.last.revision if source.last is not None else None
    async for _ in inner():
        try:
            revision: str | None = await source.poll()
        except GitkrmError:
            revision = None
        if revision is None or revision != seen:
            seen = revision
            yield None
