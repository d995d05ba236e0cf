"""Offline validation of a tree of manifests: what `gitkrm validate` reports.

The same renderer the sync engine uses, over files on disk: every object is admitted
against the schema registry exactly as the store would admit it on create (CRDs found
in the tree first, so their custom resources validate too), then the checks across
objects (duplicates, dependency order). Without a store there is no default namespace
and no namespace lookup: a namespaced object must name its namespace.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitkrm.errors import ManifestError
from gitkrm.krm import Obj
from gitkrm.source.snapshot import FileEntry, MemoryBlobs, Snapshot, git_blob_id
from gitkrm.sync.kustomize import KUSTOMIZATION_NAMES
from gitkrm.sync.parse import ParseContext
from gitkrm.sync.postbuild_spec import PostBuildSpec
from gitkrm.sync.problems import Problem, describe_ref
from gitkrm.sync.render import MANIFEST_SUFFIXES, Renderer

__all__ = ["MANIFEST_SUFFIXES", "Problem", "Report", "describe_ref", "manifest_files"]
__all__ += ["validate_paths", "validate_tree"]


@dataclass(frozen=True, slots=True)
class Report:
    files: int
    objects: int
    problems: Sequence[Problem]
    warnings: Sequence[Problem]

    @property
    def ok(self) -> bool:
        return not self.problems


def _walk(root: Path, *, everything_under_kustomizations: bool) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    real_root = root.resolve()
    kustomized: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        here = Path(dirpath)
        if everything_under_kustomizations and any(n in KUSTOMIZATION_NAMES for n in filenames):
            kustomized.append(here)
        inside = any(here == k or here.is_relative_to(k) for k in kustomized)
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            if not (inside or name.endswith(MANIFEST_SUFFIXES)):
                continue
            path = here / name
            if path.is_symlink() and not path.resolve().is_relative_to(real_root):
                raise ManifestError(
                    "symlink points outside the repository", path=str(path), line=None
                )
            yield path


def manifest_files(root: Path) -> Iterator[Path]:
    """Manifest files under `root` in a stable order; hidden entries (`.git`) are skipped.

    A symlink that leaves `root` is refused: validation never reads outside the tree.
    """
    return _walk(root, everything_under_kustomizations=False)


_ELSEWHERE = re.compile(r"is also defined at (.+):\d+$")


def _key(path: Path) -> str:
    """A snapshot path for a file on disk: relative, posix (kustomize materializes it)."""
    return path.absolute().as_posix().lstrip("/")


async def validate_tree(
    paths: Sequence[Path], *, crds: Sequence[Obj] = (), postbuild: PostBuildSpec | None = None
) -> Report:
    """Load and admit every manifest under `paths`; collect every problem, not just the
    first. `crds` are CustomResourceDefinitions known besides those in the tree;
    `postbuild`: inline variables and key files of Flux's post-build steps."""
    problems: list[Problem] = []
    files: dict[str, FileEntry] = {}
    blobs: dict[str, bytes] = {}
    shown: dict[str, str] = {}
    for root in paths:
        try:
            for path in _walk(root, everything_under_kustomizations=True):
                data = path.read_bytes()
                key = _key(path)
                blob = git_blob_id(data)
                files[key] = FileEntry(path=key, blob=blob, size=len(data))
                blobs[blob] = data
                shown[key] = str(path)
        except ManifestError as e:
            problems.append(Problem(e.path, e.line, e.object, e.detail))
    snapshot = Snapshot(revision="local", files=files, reader=MemoryBlobs(blobs))
    renderer = Renderer(context=ParseContext())
    inputs = None
    if postbuild is not None:
        from gitkrm.sync.postbuild_inputs import resolve

        inputs = await resolve(None, postbuild)
    result = await renderer.render(snapshot, store_crds=crds, postbuild=inputs)

    def located(p: Problem) -> Problem:
        message = p.message
        other = _ELSEWHERE.search(message)
        if other is not None and other.group(1) in shown:
            message = message[: other.start(1)] + shown[other.group(1)] + message[other.end(1) :]
        return Problem(shown.get(p.path, p.path), p.line, p.object, message)

    problems.extend(located(p) for p in result.problems)
    problems.sort(key=lambda p: (p.path, p.line or 0))
    counted = sum(1 for k in files if k.endswith(MANIFEST_SUFFIXES))
    return Report(
        files=counted,
        objects=result.parsed,
        problems=problems,
        warnings=[located(w) for w in result.warnings],
    )


def validate_paths(
    paths: Sequence[Path], *, crds: Sequence[Obj] = (), postbuild: PostBuildSpec | None = None
) -> Report:
    """`validate_tree` for synchronous callers (the CLI)."""
    return asyncio.run(validate_tree(paths, crds=crds, postbuild=postbuild))
