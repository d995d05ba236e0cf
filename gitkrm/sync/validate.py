"""Offline validation of a tree of manifests: what `gitkrm validate` reports.

Every object is admitted against a private copy of the schema registry, exactly as the
store would admit it on create, so a manifest that passes here is one a cluster accepts.
CRDs found in the tree are registered first, so their custom resources validate too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitkrm.errors import GitkrmError, ManifestError
from gitkrm.krm import GVK, FieldValidation
from gitkrm.krm.manifest import Manifest
from gitkrm.krm.yamlio import load_manifests
from gitkrm.schema import Registry

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a manifest would be refused, located by file, line and object."""

    path: str
    line: int | None
    object: str | None
    message: str

    def __str__(self) -> str:
        loc = f"{self.path}:{self.line}" if self.line else self.path
        return f"{loc}: {self.object}: {self.message}" if self.object else f"{loc}: {self.message}"


@dataclass(frozen=True, slots=True)
class Report:
    files: int
    objects: int
    problems: Sequence[Problem]
    warnings: Sequence[Problem]

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
        for name in sorted(filenames):
            if name.startswith(".") or not name.endswith(MANIFEST_SUFFIXES):
                continue
            path = Path(dirpath) / name
            if path.is_symlink() and not path.resolve().is_relative_to(real_root):
                raise ManifestError(
                    "symlink points outside the repository", path=str(path), line=None
                )
            yield path


def describe(m: Manifest) -> str:
    meta = m.obj.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or "<unnamed>"
    ns = meta.get("namespace")
    return f"{m.obj.get('kind')} {ns}/{name}" if ns else f"{m.obj.get('kind')} {name}"


def _load(paths: Iterable[Path], problems: list[Problem]) -> tuple[int, list[Manifest]]:
    files = 0
    manifests: list[Manifest] = []
    for root in paths:
        try:
            for path in manifest_files(root):
                files += 1
                try:
                    manifests.extend(load_manifests(path.read_bytes(), path=str(path)))
                except ManifestError as e:
                    problems.append(Problem(e.path, e.line, e.object, e.detail))
        except ManifestError as e:
            problems.append(Problem(e.path, e.line, e.object, e.detail))
    return files, manifests


def validate_paths(paths: Sequence[Path], *, registry: Registry | None = None) -> Report:
    """Load and admit every manifest under `paths`; collect every problem, not just the first."""
    reg = registry or Registry.builtin()
    problems: list[Problem] = []
    warnings: list[Problem] = []
    files, manifests = _load(paths, problems)
    crd_gvk = GVK(group="apiextensions.k8s.io", version="v1", kind="CustomResourceDefinition")
    ordered = sorted(manifests, key=lambda m: GVK.of(m.obj) != crd_gvk)
    for m in ordered:
        try:
            gvk = GVK.of(m.obj)
            warn = reg.admit(m.obj, field_validation=FieldValidation.STRICT)
            warnings.extend(Problem(m.path, m.line, describe(m), w) for w in warn)
            if gvk == crd_gvk:
                reg.register_crd(m.obj)
        except GitkrmError as e:
            problems.append(Problem(m.path, m.line, describe(m), e.message))
    problems.sort(key=lambda p: (p.path, p.line or 0))
    return Report(files=files, objects=len(manifests), problems=problems, warnings=warnings)
