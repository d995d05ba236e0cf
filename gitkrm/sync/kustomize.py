"""Directories with a kustomization, rendered by `kustomize build` (or `kubectl kustomize`).

A snapshot may live only in Git's object database, so each kustomization root is
materialized into a temporary directory first: its own subtree plus the directories its
`resources`, `bases` and `components` reach (bases of overlays), nothing else. A
kustomization that another one uses is a base, not a root of its own; files under any
kustomization directory belong to kustomize and are not read as plain manifests.

Kustomize reads files only under a kustomization's own directory, but follows directory
references (`resources`, `bases`, `components`, `generators`, `transformers`,
`validators`) anywhere, and fetches remote ones. So every such reference must name
something of the repository: a remote URL, an absolute path, a path that leaves the source
root or names nothing in it, and a cycle of kustomizations are problems of the file that
holds them, and a kustomization whose bases have a problem is not rendered at all.
"""

from __future__ import annotations

import asyncio
import hashlib
import posixpath
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from gitkrm.errors import BadRequest

KUSTOMIZATION_NAMES: Final = ("kustomization.yaml", "kustomization.yml", "Kustomization")
TIMEOUT: Final = 120.0
_REFERENCE_FIELDS: Final = (
    "resources",
    "bases",
    "components",
    "generators",
    "transformers",
    "validators",
)
# Entries of these may also be inline configurations (YAML text) instead of paths.
_INLINE_FIELDS: Final = frozenset({"generators", "transformers", "validators"})


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
    return "://" in ref or ref.startswith(("git@", "git::", "github.com/", "gitlab.com/"))


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
    refs, problems = _references(text, directory=directory)
    if problems:
        raise BadRequest(problems[0])
    return refs


def _references(text: bytes, *, directory: str) -> tuple[list[str], list[str]]:
    """The references that name paths of the source, and the problems of the others (the
    good ones still count: they make their directories bases, not roots)."""
    try:
        doc = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as e:
        return [], [f"invalid kustomization: {e}"]
    if doc is None:
        return [], []
    if not isinstance(doc, dict):
        return [], ["a kustomization must be a mapping"]
    out: list[str] = []
    problems: list[str] = []
    for key in _REFERENCE_FIELDS:
        refs: Any = doc.get(key) or []
        if not isinstance(refs, list):
            problems.append(f"kustomization field {key!r} must be a list")
            continue
        for ref in refs:
            if not isinstance(ref, str) or (key in _INLINE_FIELDS and "\n" in ref):
                continue
            joined = posixpath.normpath(posixpath.join(directory or ".", ref))
            if _is_remote(ref):
                problems.append(
                    f"{key} entry {ref!r} is remote: gitkrm renders only what the repository "
                    "holds (vendor the base into the repository)"
                )
            elif ref.startswith("/"):
                problems.append(f"{key} entry {ref!r} is an absolute path")
            elif joined == ".." or joined.startswith("../") or joined.startswith("/"):
                problems.append(f"{key} entry {ref!r} leaves the source root")
            else:
                out.append("" if joined == "." else joined)
    return out, problems


def _exists(ref: str, files: set[str], dirs: set[str]) -> bool:
    return ref in files or ref in dirs


def _parents(files: Iterable[str]) -> set[str]:
    """Every directory that holds a file (the source root is "")."""
    out = {""}
    for f in files:
        d = directory_of(f)
        while d not in out:
            out.add(d)
            d = directory_of(d)
    return out


def _cycles(refs: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Kustomization directory -> a cycle through it (`[a, b, a]`), for those in cycles."""
    found: dict[str, list[str]] = {}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(refs):
        if state.get(start):
            continue
        path: list[str] = []
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(refs[start]))]
        state[start] = 1
        path.append(start)
        while stack:
            d, children = stack[-1]
            for r in children:
                if r not in refs:
                    continue
                if state.get(r) == 1:
                    cycle = [*path[path.index(r) :], r]
                    for member in cycle:
                        found.setdefault(member, cycle)
                elif not state.get(r):
                    state[r] = 1
                    path.append(r)
                    stack.append((r, iter(refs[r])))
                    break
            else:
                stack.pop()
                path.pop()
                state[d] = 2
    return found


def layout(files: Iterable[str], kustomizations: Mapping[str, bytes]) -> Layout:
    """Roots and needs, from the kustomization files' contents (by path).

    A root is rendered only when it and every kustomization it reaches have no problem:
    `problems` names the file of each that has one (the root's file says which base).
    """
    all_files = sorted(files)
    file_set = set(all_files)
    dir_set = _parents(all_files)
    kfiles = kustomization_files(all_files)
    out = Layout(dirs=set(kfiles))
    refs: dict[str, list[str]] = {}
    for d, kpath in kfiles.items():
        refs[d], problems = _references(kustomizations[kpath], directory=d)
        problems += [
            f"{r or '.'!r} is not a file or directory of the source"
            for r in refs[d]
            if not _exists(r, file_set, dir_set)
        ]
        if problems:
            out.problems[kpath] = problems[0]
    for d, cycle in _cycles({d: [r for r in rs if r in kfiles] for d, rs in refs.items()}).items():
        out.problems.setdefault(
            kfiles[d], "kustomizations use each other in a cycle: " + " -> ".join(cycle)
        )
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
        root_file = kfiles[root]
        if root_file not in out.problems:
            bad = sorted(kfiles[d] for d in need if d in kfiles and kfiles[d] in out.problems)
            if bad:
                out.problems[root_file] = f"not rendered: it uses {bad[0]}, which has a problem"
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
