"""Which files of a snapshot a render reads, and how: plain manifests, kustomizations to
build, charts to render, an Argo CD directory source's jsonnet files.

Flux's rules by default (a kustomization directory is built, a chart directory owns its
files, hidden paths are skipped); an interpreted Argo CD Application's path rules
(`appsource`) when the source has one. Plain manifests are checked before anything is
read: symlinks must point at a file of the revision, sizes must be within the limit.
Paths are repository paths; problems show them relative to the source's path (`shown`).
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from gitkrm.charts.layout import ChartLayout, chart_layout
from gitkrm.errors import BadRequest
from gitkrm.source.ignore import MANIFEST_SUFFIXES
from gitkrm.source.snapshot import MODE_SYMLINK, FileEntry, Snapshot
from gitkrm.sync import appsource, kustomize
from gitkrm.sync.problems import Problem

Entries = Mapping[str, tuple[str, FileEntry]]  # path -> (path read, entry read)


@dataclass(frozen=True, slots=True)
class Selection:
    """What one render reads: the plain manifests (`entries`, in path order), the jsonnet
    files, the kustomizations to build (`layout`) and the charts to render."""

    prefix: str  # the source's path in the repository ("" at its top)
    entries: Entries
    jsonnet: tuple[str, ...]
    layout: kustomize.Layout
    charts: ChartLayout
    read_ms: float  # reading kustomization files to find what each build needs


def join(prefix: str, path: str) -> str:
    """A path of the source in repository coordinates."""
    return f"{prefix}/{path}" if prefix and path else (prefix or path)


def shown(path: str, prefix: str) -> str:
    """A repository path as problems show it: relative to the source's path (`../` for a
    base outside it)."""
    if not prefix:
        return path
    if path.startswith(prefix + "/"):
        return path[len(prefix) + 1 :]
    return posixpath.relpath(path, prefix)


def select(
    snapshot: Snapshot,
    *,
    app: appsource.AppSource | None,
    max_file_size: int,
    problems: list[Problem],
) -> Selection:
    """What a render of `snapshot` reads (`app`: Argo CD's path rules); what is wrong with
    the choice or a file goes to `problems`."""
    files = snapshot.files
    read_ms = 0.0
    layout = kustomize.Layout()
    tree = snapshot.tree
    prefix = tree.root if tree is not None else ""
    selected: tuple[str, ...] | None = None  # Argo CD's directory source: these files
    if app is None:
        units = kustomize.units(kustomize.kustomization_files(files))
        charts = chart_layout(files)
        if units.owners and charts.roots:  # Flux's rule: kustomize's files are its own
            charts = ChartLayout(tuple(r for r in charts.roots if not units.holds(r)))
    else:
        units, charts, selected = _argocd(files, app, problems)
    if units.dirs:  # (never with `selected`)
        t = time.perf_counter()
        layout = kustomize.layout(
            set(tree.files if tree is not None else files),
            [join(prefix, d) for d in units.dirs],
            snapshot.read_tree,
            refused=tree.refused if tree is not None else None,
        )
        read_ms += (time.perf_counter() - t) * 1000
        problems.extend(
            Problem(shown(p, prefix), None, None, m) for p, m in layout.problems.items()
        )
    if selected is not None:
        plain = list(selected)
    else:  # without kustomizations `units.plain` is "not hidden"
        plain = sorted(
            p
            for p in files
            if p.endswith(MANIFEST_SUFFIXES) and units.plain(p) and not charts.owned(p)
        )
    jsonnet = tuple(p for p in plain if p.endswith(".jsonnet"))  # only Argo CD selects them
    if jsonnet:
        plain = [p for p in plain if not p.endswith(".jsonnet")]
    entries = _entries(snapshot, plain, max_file_size, problems)
    return Selection(prefix, entries, jsonnet, layout, charts, read_ms)


def _entries(
    snapshot: Snapshot, plain: list[str], max_file_size: int, problems: list[Problem]
) -> dict[str, tuple[str, FileEntry]]:
    """The plain manifests to read, symlinks resolved; those that can't be read (a link
    leaving the revision, a file over the limit) as problems."""
    files = snapshot.files
    entries: dict[str, tuple[str, FileEntry]] = {}
    for path in plain:
        entry = files[path]
        source = path
        try:
            if entry.mode == MODE_SYMLINK:
                target = snapshot.read(path).decode("utf-8", "replace")
                source, entry = _symlink_target(path, target, files)
        except BadRequest as e:
            problems.append(Problem(path, None, None, e.message))
            continue
        if entry.size > max_file_size:
            problems.append(
                Problem(
                    path,
                    None,
                    None,
                    f"file is {entry.size:,} bytes, over the limit of {max_file_size:,}",
                )
            )
            continue
        entries[path] = (source, entry)
    return entries


def _symlink_target(
    path: str, target: str, files: Mapping[str, FileEntry]
) -> tuple[str, FileEntry]:
    """The entry a symlink entry of a snapshot points at (sources resolve links; a
    hand-made snapshot may not)."""
    if target.startswith("/"):
        raise BadRequest(f"symlink to {target!r} leaves the repository")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if joined == ".." or joined.startswith("../"):
        raise BadRequest(f"symlink to {target!r} leaves the repository")
    entry = files.get(joined)
    if entry is None or entry.mode == MODE_SYMLINK:
        raise BadRequest(f"symlink to {target!r}: the target is not a file of this revision")
    return joined, entry


def _argocd(
    files: Collection[str], app: appsource.AppSource, problems: list[Problem]
) -> tuple[kustomize.Units, ChartLayout, tuple[str, ...] | None]:
    """Argo CD's choice for the path (`appsource`): the kustomization built, the chart
    rendered, or the files of a directory source read as they are."""
    sel = appsource.select(files, app)
    if sel.chart:
        return kustomize.Units((), frozenset()), ChartLayout(("",)), ()
    if sel.kind is appsource.SourceType.KUSTOMIZE:
        if "" not in kustomize.kustomization_files(files):
            problems.append(
                Problem(
                    ".",
                    None,
                    None,
                    "spec.source.kustomize: no kustomization.yaml at "
                    "the top of the path (a kustomize source builds one)",
                )
            )
            return kustomize.Units((), frozenset()), ChartLayout(), ()
        return kustomize.Units(("",), frozenset({""})), ChartLayout(), None
    return kustomize.Units((), frozenset()), ChartLayout(), sel.plain
