"""Offline validation of a tree of manifests: what `gitkrm validate` reports, and what
`run` would render from the same files.

Each directory is listed by the source code `run` uses for a plain directory (the same
ignore files, default ignores and path rules), with the Git work tree that holds it (or
the directory itself, outside one) as the repository: a kustomization's `../` bases
resolve as in a sync. The same renderer then admits every object as the store would on
create, with `run`'s default namespace (`default`, or `--namespace`), the CRDs of the tree
and those given (the store's, with `--state`), and the checks across objects. What it
can't know without a store (namespaces that exist only there) is not checked.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

from gitkrm.errors import Cause, GitkrmError, ManifestError
from gitkrm.krm import Obj
from gitkrm.source.ignore import MANIFEST_SUFFIXES
from gitkrm.source.snapshot import FileEntry, MemoryBlobs, Snapshot, git_blob_id
from gitkrm.sync.parse import ParseContext
from gitkrm.sync.postbuild_spec import PostBuildSpec
from gitkrm.sync.problems import Problem, describe_ref
from gitkrm.sync.render import Renderer

__all__ = ["MANIFEST_SUFFIXES", "Problem", "Report", "describe_ref", "manifest_files"]
__all__ += ["validate_paths", "validate_tree", "work_tree_root"]


@dataclass(frozen=True, slots=True)
class Report:
    files: int
    objects: int
    problems: Sequence[Problem]
    warnings: Sequence[Problem]
    keys: frozenset[str] = frozenset()  # the object keys rendered (see sync.objkey)

    @property
    def ok(self) -> bool:
        return not self.problems


def manifest_files(root: Path) -> Iterator[Path]:
    """Manifest files under `root` in a stable order; hidden entries (`.git`) are skipped.

    A symlink that leaves `root` is refused: validation never reads outside the tree.
    """
    if root.is_file():
        yield root
        return
    real_root = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        here = Path(dirpath)
        for name in sorted(filenames):
            if name.startswith(".") or not name.endswith(MANIFEST_SUFFIXES):
                continue
            path = here / name
            if path.is_symlink() and not path.resolve().is_relative_to(real_root):
                raise ManifestError(
                    "symlink points outside the repository", path=str(path), line=None
                )
            yield path


def work_tree_root(path: Path) -> Path | None:
    """The Git work tree that holds `path` (a directory with `.git`), or None."""
    here = path.resolve()
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return d
    return None


_ELSEWHERE = re.compile(r"is also defined at (.+?)(:\d+| \(a kustomize build\))$")


def _one_file(path: Path) -> Snapshot:
    data = path.read_bytes()
    blob = git_blob_id(data)
    files = {path.name: FileEntry(path=path.name, blob=blob, size=len(data))}
    return Snapshot(revision="local", files=files, reader=MemoryBlobs({blob: data}))


def _where(path: Path) -> tuple[Path, str]:
    """The repository of a validated directory (its Git work tree, or itself) and the
    directory's path in it ("" at the top)."""
    top = work_tree_root(path) or path.resolve()
    sub = path.resolve().relative_to(top).as_posix()
    return top, "" if sub == "." else sub


async def _snapshot(path: Path) -> tuple[Snapshot, Path]:
    """One path as `run` lists it (a plain directory source), and the directory its files'
    paths are relative to."""
    from gitkrm.source.local import LocalSource

    if await asyncio.to_thread(path.is_file):
        return await asyncio.to_thread(_one_file, path), path.parent
    top, sub = await asyncio.to_thread(_where, path)
    source = LocalSource(name="validate", root=top, path=sub)
    try:
        return await source.snapshot(), path
    finally:
        await source.close()


def _cause_problems(path: Path, causes: Sequence[Cause]) -> list[Problem]:
    """A listing's causes (their fields are repository paths) as problems of `path`."""
    sub = _where(path)[1] or "."
    return [
        Problem(
            os.path.normpath(path / os.path.relpath(c.field or ".", sub)), None, None, c.message
        )
        for c in causes
    ]


class ValidateKeywords(TypedDict, total=False):
    """How paths are validated: `crds` are CustomResourceDefinitions known besides those in
    the tree; `namespace` the default namespace (`default` when None, as `run`);
    `server_side` (no client-side annotation limit); `postbuild`: inline variables and key
    files of Flux's post-build steps."""

    crds: Sequence[Obj]
    namespace: str | None
    server_side: bool
    postbuild: PostBuildSpec | None


async def validate_tree(paths: Sequence[Path], **options: Unpack[ValidateKeywords]) -> Report:
    """Render and admit every path as `run` would; collect every problem, not just the
    first (see ValidateKeywords for the options)."""
    crds = options.get("crds", ())
    namespace = options.get("namespace")
    postbuild = options.get("postbuild")
    inputs = None
    if postbuild is not None:
        from gitkrm.sync.postbuild_inputs import resolve

        inputs = await resolve(None, postbuild)
    problems: list[Problem] = []
    warnings: list[Problem] = []
    files = objects = 0
    keys: set[str] = set()
    for path in paths:
        try:
            snapshot, base = await _snapshot(path)
        except ManifestError as e:
            problems.append(Problem(e.path, e.line, e.object, e.detail))
            continue
        except GitkrmError as e:
            causes = getattr(e, "causes", None) or ()
            if not causes:
                problems.append(Problem(str(path), None, None, e.message))
            problems.extend(_cause_problems(path, causes))
            continue
        renderer = Renderer(
            context=ParseContext(default_namespace=namespace or "default"),
            annotation_limit=not options.get("server_side", False),
        )
        result = await renderer.render(snapshot, store_crds=crds, postbuild=inputs)

        def located(p: Problem, base: Path = base) -> Problem:
            message = p.message
            other = _ELSEWHERE.search(message)
            if other is not None:
                where = os.path.normpath(base / other.group(1))
                message = message[: other.start(1)] + where + message[other.end(1) :]
            return Problem(os.path.normpath(base / p.path), p.line, p.object, message)

        problems.extend(located(p) for p in result.problems)
        warnings.extend(located(w) for w in result.warnings)
        files += result.files
        objects += result.parsed
        keys |= result.keys
    problems.sort(key=lambda p: (p.path, p.line or 0))
    return Report(
        files=files, objects=objects, problems=problems, warnings=warnings, keys=frozenset(keys)
    )


def validate_paths(paths: Sequence[Path], **options: Unpack[ValidateKeywords]) -> Report:
    """`validate_tree` for synchronous callers (the CLI)."""
    return asyncio.run(validate_tree(paths, **options))
