"""Kustomizations: which ones a source path builds (Flux's rule), what each build reads, and
`kustomize build` (or `kubectl kustomize`) over a copy of exactly those files.

Which are built (kustomize-controller's rule): a path with a kustomization at its top is
built as that kustomization alone; otherwise every kustomization directory below it is
built as one unit and not descended into (its files belong to kustomize), and the other
manifests are read as they are. gitkrm adds: a kustomize `Component` is never built on its
own, and names that start with `.` (hidden files and directories) are never looked into
for manifests or kustomizations (a build may still read a hidden file it names).

What a build reads: kustomize runs with load restrictions off, as in Flux, so a
kustomization may name bases and files anywhere in the repository, through every field
that names a path (`kustomize_refs`); every such path is checked first: a remote URL, an
absolute path, a path that leaves the repository or names nothing in it (an ignored file,
a symlink out of the repository), and a cycle of kustomizations are problems of the file
that holds them, and a build that reaches a kustomization with a problem is not run. The
copy holds only the files checked, so kustomize never sees anything else.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from gitkrm.errors import BadRequest
from gitkrm.sync.kustomize_refs import (
    Ref,
    RefKind,
    is_component,
    kustomization_refs,
    load,
    plugin_refs,
    resolve,
)

KUSTOMIZATION_NAMES: Final = ("kustomization.yaml", "kustomization.yml", "Kustomization")
TIMEOUT: Final = 120.0
MAX_ERROR_CHARS: Final = 8192  # of kustomize's own error text, kept whole up to this

Reader = Callable[[Collection[str]], Mapping[str, bytes]]


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


def hidden(path: str) -> bool:
    """Whether a path has a component whose name starts with `.`."""
    return path.startswith(".") or "/." in path


@dataclass(frozen=True, slots=True)
class Units:
    """What a source path renders, in its own coordinates: the kustomization directories
    built as one unit each (Components among them still to be dropped), and the test of
    a manifest read as it is."""

    dirs: tuple[str, ...]
    owners: frozenset[str]  # every kustomization directory whose files belong to kustomize

    def plain(self, path: str) -> bool:
        """Whether a manifest file is read as it is (not hidden, not kustomize's)."""
        return not hidden(path) and not self.holds(directory_of(path))

    def holds(self, directory: str) -> bool:
        """Whether `directory` is, or lies under, a kustomization directory: its files are
        kustomize's (a `Chart.yaml` there is not a chart of its own either)."""
        if not self.owners:
            return False
        d = directory
        while True:
            if d in self.owners:
                return True
            if not d:
                return False
            d = directory_of(d)


def units(kfiles: Mapping[str, str]) -> Units:
    """Flux's rule over the kustomization directories below a source path (`kfiles`)."""
    dirs = {d for d in kfiles if not hidden(d)}
    if "" in dirs:
        return Units(("",), frozenset({""}))

    def nested(d: str) -> bool:
        while d:
            d = directory_of(d)
            if d in dirs:
                return True
        return False

    return Units(tuple(sorted(d for d in dirs if not nested(d))), frozenset(dirs))


@dataclass(slots=True)
class Layout:
    """The builds of a revision (repository coordinates) and what each reads."""

    roots: list[str] = field(default_factory=list)  # built, each on its own
    kfiles: dict[str, str] = field(default_factory=dict)  # root or component -> its file
    components: list[str] = field(default_factory=list)  # units that are Components: skipped
    needs: dict[str, set[str]] = field(default_factory=dict)  # root -> files it reads
    problems: dict[str, str] = field(default_factory=dict)  # file -> message


def _parents(files: Iterable[str]) -> set[str]:
    """Every directory that holds a file (the repository's top is "")."""
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


@dataclass(slots=True)
class _Node:
    """One kustomization reached: the kustomizations and the files it uses."""

    uses: list[str] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


class _Walk:
    """Follows the references of kustomizations through the repository tree."""

    def __init__(self, tree: Collection[str], read: Reader, refused: Mapping[str, str]) -> None:
        self.files = tree if isinstance(tree, (set, frozenset)) else set(tree)
        self.dirs = _parents(self.files)
        self.kfiles = kustomization_files(self.files)
        self.read = read
        self.refused = refused
        self.nodes: dict[str, _Node] = {}
        self.components: set[str] = set()

    def _refusal(self, path: str) -> str | None:
        d = path
        while True:
            why = self.refused.get(d)
            if why is not None:
                return why
            if not d:
                return None
            d = directory_of(d)

    def visit(self, starts: Iterable[str]) -> None:
        todo = [d for d in starts if d not in self.nodes]
        while todo:
            texts = self.read([self.kfiles[d] for d in todo])
            nxt: list[str] = []
            for d in todo:
                node = self.nodes[d] = _Node(files={self.kfiles[d]})
                names = [n for n in KUSTOMIZATION_NAMES if (f"{d}/{n}" if d else n) in self.files]
                if len(names) > 1:  # gitkrm would build one; kustomize (so Flux) builds none
                    node.problems.append(
                        f"several kustomization files ({', '.join(names)}): kustomize refuses "
                        "the directory (Found multiple kustomization files); keep one"
                    )
                doc, err = load(texts[self.kfiles[d]])
                if doc is None:
                    node.problems.append(err or "invalid kustomization")
                    continue
                if is_component(doc):
                    self.components.add(d)
                refs, problems = kustomization_refs(doc)
                node.problems.extend(problems)
                self._follow(d, node, refs)
                nxt.extend(u for u in node.uses if u not in self.nodes and u not in nxt)
            todo = nxt

    def _follow(self, d: str, node: _Node, refs: list[Ref]) -> None:
        pending = list(refs)
        while pending:
            ref = pending.pop(0)
            path, err = resolve(ref, d)
            if path is None:
                node.problems.append(err or ref.value)
                continue
            why = self._refusal(path)
            if why is not None:
                node.problems.append(f"{ref.where} entry {ref.value!r}: {why}")
            elif ref.kind is not RefKind.FILE and path in self.kfiles:
                node.uses.append(path)
            elif path in self.files:
                node.files.add(path)
                if ref.kind is RefKind.CONFIG:
                    text = self.read([path])[path]
                    pending.extend(plugin_refs(text))
            elif path in self.dirs and ref.kind is not RefKind.FILE:
                node.problems.append(
                    f"{ref.where} entry {ref.value!r}: the directory {path or '.'!r} holds no "
                    "kustomization"
                )
            else:
                node.problems.append(
                    f"{ref.where} entry {ref.value!r}: {path or '.'!r} is not a file or "
                    "directory of the repository (or an ignore rule excludes it)"
                )


def layout(
    tree: Collection[str],
    roots: Sequence[str],
    read: Reader,
    *,
    refused: Mapping[str, str] | None = None,
) -> Layout:
    """The builds of the kustomization directories `roots` (repository coordinates), over
    the repository's files `tree`; `read` gives files' contents by path.

    A root is built only when it and every kustomization it reaches have no problem:
    `problems` names the file of each that has one (the root's file says which).
    """
    walk = _Walk(tree, read, refused or {})
    walk.visit(roots)
    out = Layout()
    kfiles = walk.kfiles
    for d, node in walk.nodes.items():
        if node.problems:
            out.problems[kfiles[d]] = "; ".join(node.problems)
    for d, cycle in _cycles({d: n.uses for d, n in walk.nodes.items()}).items():
        out.problems.setdefault(
            kfiles[d], "kustomizations use each other in a cycle: " + " -> ".join(cycle)
        )
    for root in roots:
        out.kfiles[root] = kfiles[root]
        if root in walk.components:
            out.components.append(root)  # not built on its own; `needs` for an overlay's use
        else:
            out.roots.append(root)
        need: set[str] = set()
        seen: set[str] = set()
        stack = [root]
        while stack:
            d = stack.pop()
            if d in seen:
                continue
            seen.add(d)
            node = walk.nodes[d]
            need |= node.files
            stack.extend(node.uses)
        out.needs[root] = need
        root_file = kfiles[root]
        if root_file not in out.problems:
            # a kustomization it builds, or a kustomization file it reads as a resource
            bad = sorted(({kfiles[d] for d in seen} | need) & out.problems.keys())
            if bad:
                out.problems[root_file] = f"not rendered: it uses {bad[0]}, which has a problem"
    return out


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


_KLOG = re.compile(r'^[EWIF]\d{4} [\d:.]+\s+\d+ \S+\] "command failed" err=(".*")$', re.M)
_KLOG_BLOCK = re.compile(
    r'^[EWIF]\d{4} [\d:.]+\s+\d+ \S+\] "command failed" err=<\n(.*?)\n\s*>$', re.M | re.S
)


def _unklog(text: str) -> str:
    """kubectl's log line `E1126 ... "command failed" err="..."` (or `err=<` and a block
    of tab-indented lines up to ` >`) as the error it carries."""

    def unquote(m: re.Match[str]) -> str:
        try:
            return str(json.loads(m.group(1)))
        except ValueError:
            return m.group(1)

    def dedent(m: re.Match[str]) -> str:
        return "\n".join(line.removeprefix("\t") for line in m.group(1).splitlines())

    return _KLOG.sub(unquote, _KLOG_BLOCK.sub(dedent, text))


def error_text(err: bytes, *, tmp: str, returncode: int | None) -> str:
    """kustomize's error, every line (temporary paths made repository paths), bounded."""
    text = _unklog(err.decode("utf-8", "replace"))
    text = text.replace(tmp + "/", "").replace(tmp, ".").strip()
    if not text:
        return f"exit code {returncode}"
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + f" ... ({len(text) - MAX_ERROR_CHARS:,} more characters)"
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    return "\n  ".join(lines)


async def build(
    root: str,
    contents: Mapping[str, bytes],
    *,
    limit: float = TIMEOUT,
    fifos: Callable[[Path], AbstractContextManager[None]] | None = None,
    root_only: bool = False,
) -> bytes:
    """Materialize `contents` (path -> bytes) and run kustomize on `root`; BadRequest with
    kustomize's own message on failure. `fifos`: files served through FIFOs in the build
    directory while kustomize runs (decrypted inputs, see `kustomize_sops`). `root_only`:
    kustomize's default load restrictions (files only under a kustomization's directory,
    as Argo CD builds), not Flux's none."""
    cmd = command()
    with tempfile.TemporaryDirectory(prefix="gitkrm-kustomize-") as tmp, ExitStack() as stack:
        base = Path(tmp)
        for path, data in contents.items():
            target = base / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        (base / root).mkdir(parents=True, exist_ok=True)
        if fifos is not None:
            stack.enter_context(fifos(base))
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            str(base / root),
            # As Flux (every path checked first), or as Argo CD: kustomize's default.
            "--load-restrictor="
            + ("LoadRestrictionsRootOnly" if root_only else "LoadRestrictionsNone"),
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
            text = error_text(err, tmp=str(base), returncode=proc.returncode)
            raise BadRequest(f"{Path(cmd[0]).name} {cmd[1]} failed: {text}")
        return out
