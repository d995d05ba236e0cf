"""Directories with a kustomization, rendered by `kustomize build` (or `kubectl kustomize`).

A snapshot may live only in Git's object database, so each kustomization root is
materialized into a temporary directory first: its own subtree plus the directories its
`resources`, `bases` and `components` reach (bases of overlays), nothing else. A
kustomization that another one uses is a base, not a root of its own; files under any
kustomization directory belong to kustomize and are not read as plain manifests.
"""

from __future__ import annotations

import asyncio
import hashlib
import posixpath
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from gitkrm.errors import BadRequest

KUSTOMIZATION_NAMES: Final = ("kustomization.yaml", "kustomization.yml", "Kustomization")
TIMEOUT: Final = 120.0
_REFERENCE_FIELDS: Final = ("resources", "bases", "components")


def directory_of(path: str) -> str:
    return path.rpartition("/")[0]


def kustomization_files(paths: Iterable[str]) -> dict[str, str]:
    """Directory -> its kustomization file (the first of kustomize's accepted names)."""
    out: dict[str, str] = {}
    for p in sorted(p for p in paths if p.endswith(KUSTOMIZATION_NAMES)):
        d, _, name = p.rpartition("/")
        if name in KUSTOMIZATION_NAMES:
            known = out.get(d)
            if known is None or KUSTOMIZATION_NAMES.index(name) < KUSTOMIZATION_NAMES.index(
                known.rpartition("/")[2]
            ):
                out[d] = p
    return out


def under(path: str, directory: str) -> bool:
    return not directory or path.startswith(directory + "/")


def _is_remote(ref: str) -> bool:
    return "://" in ref or ref.startswith(("git@", "github.com/", "gitlab.com/"))


@dataclass(slots=True)
class Layout:
    """Kustomization roots of a snapshot and what each needs materialized."""

    roots: list[str] = field(default_factory=list)
    dirs: set[str] = field(default_factory=set)  # every kustomization directory
    needs: dict[str, set[str]] = field(default_factory=dict)  # root -> directories/files
    problems: dict[str, str] = field(default_factory=dict)  # kustomization file -> message

    def owned(self, path: str) -> bool:
        """Whether a file belongs to a kustomization (and is not read on its own)."""
        if not self.dirs:
            return False
        d = directory_of(path)
        while True:
            if d in self.dirs:
                return True
            if not d:
                return False
            d = directory_of(d)


def references(text: bytes, *, directory: str) -> list[str]:
    """Local paths (relative to the source root) a kustomization's resources name."""
    try:
        doc = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as e:
        raise BadRequest(f"invalid kustomization: {e}") from None
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise BadRequest("a kustomization must be a mapping")
    out: list[str] = []
    for key in _REFERENCE_FIELDS:
        refs: Any = doc.get(key) or []
        if not isinstance(refs, list):
            raise BadRequest(f"kustomization field {key!r} must be a list")
        for ref in refs:
            if not isinstance(ref, str) or _is_remote(ref):
                continue
            joined = posixpath.normpath(posixpath.join(directory or ".", ref))
            if joined == ".." or joined.startswith("../") or joined.startswith("/"):
                raise BadRequest(f"{key} entry {ref!r} leaves the source root")
            out.append("" if joined == "." else joined)
    return out


def layout(files: Iterable[str], kustomizations: Mapping[str, bytes]) -> Layout:
    """Roots and needs, from the kustomization files' contents (by path)."""
    all_files = sorted(files)
    kfiles = kustomization_files(all_files)
    out = Layout(dirs=set(kfiles))
    refs: dict[str, list[str]] = {}
    for d, kpath in kfiles.items():
        try:
            refs[d] = references(kustomizations[kpath], directory=d)
        except BadRequest as e:
            out.problems[kpath] = e.message
            refs[d] = []
    used = {r for rs in refs.values() for r in rs if r in kfiles}
    out.roots = sorted(d for d in kfiles if d not in used)
    for root in out.roots:
        need: set[str] = set()
        stack = [root]
        while stack:
            d = stack.pop()
            if d in need:
                continue
            need.add(d)
            for r in refs.get(d, ()):
                if r in kfiles:
                    stack.append(r)
                else:
                    need.add(r)  # a plain directory or a file
        out.needs[root] = need
    return out


def needed_files(need: set[str], files: Sequence[str]) -> list[str]:
    """The snapshot files a root needs: everything under its directories, and named files."""
    return [f for f in files if f in need or any(under(f, d) for d in need)]


def tree_key(root: str, entries: Iterable[tuple[str, str]]) -> str:
    """A cache key of a root's input tree (paths and blob ids)."""
    h = hashlib.sha256(root.encode() + b"\0")
    for path, blob in sorted(entries):
        h.update(f"{path}\0{blob}\0".encode())
    return h.hexdigest()


def command() -> list[str]:
    """`kustomize build` or `kubectl kustomize`, whichever is on PATH."""
    exe = shutil.which("kustomize")
    if exe is not None:
        return [exe, "build"]
    exe = shutil.which("kubectl")
    if exe is not None:
        return [exe, "kustomize"]
    raise BadRequest(
        "rendering a kustomization needs `kustomize` or `kubectl` on PATH; neither was found"
    )


async def build(root: str, contents: Mapping[str, bytes], *, limit: float = TIMEOUT) -> bytes:
    """Materialize `contents` (path -> bytes) and run kustomize on `root`; BadRequest with
    kustomize's own message on failure."""
    cmd = command()
    with tempfile.TemporaryDirectory(prefix="gitkrm-kustomize-") as tmp:
        base = Path(tmp)
        for path, data in contents.items():
            target = base / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        (base / root).mkdir(parents=True, exist_ok=True)
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            str(base / root),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
        )
        try:
            async with asyncio.timeout(limit):
                out, err = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise BadRequest(f"{' '.join(cmd[-2:])} timed out after {limit:.0f} s") from None
        if proc.returncode != 0:
            text = err.decode("utf-8", "replace").replace(str(base) + "/", "").strip()
            last = text.splitlines()[-1] if text else f"exit code {proc.returncode}"
            raise BadRequest(f"{Path(cmd[0]).name} {cmd[1]} failed: {last}")
        return out
