"""Argo CD's rules for an Application's source path, for interpreted Applications only
(every other source renders as Flux's kustomize-controller does: see `kustomize`). Pure.

Argo CD's repo-server picks a source type: the one the Application names (`directory`,
`kustomize`), else what the path holds: a kustomization at its top is built (with
kustomize's default load restrictions: files only under the kustomization's directory,
bases anywhere in the repository), a `Chart.yaml` at its top is a Helm chart, anything
else is a directory source: the `.yaml`, `.yml` and `.json` files of the path itself (all
below it with `recurse`), kept by the `include` and dropped by the `exclude` glob (matched
against the path relative to the source path, `*` crossing `/`, `{a,b}` alternation, as
Argo CD's gobwas globs without separators). A kustomization below the top is read as a
plain file, never built. Hidden files are read like any other.

The Application's `syncOptions` that apply to every object (`ServerSideApply=true`,
`Prune=false`, `Force=true`) are laid over the objects' own annotations here, and
`CreateNamespace=true` adds the destination Namespace (with `managedNamespaceMetadata`)
when the revision does not hold it: it is never pruned, as Argo CD never deletes it.

An object the path renders more than once is not an error, as in Argo CD's controller
(`NormalizeTargetObjects`): the last one is kept, with a warning (Argo CD's
RepeatedResourceWarning).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from gitkrm.charts.layout import CHART_FILE
from gitkrm.sync import peers
from gitkrm.sync.appsource_spec import (
    NAMESPACE_PATH,
    AppSource,
    DirectorySpec,
    ManagedNamespace,
    SourceType,
)
from gitkrm.sync.desired import Desired
from gitkrm.sync.kustomize import KUSTOMIZATION_NAMES
from gitkrm.sync.problems import Problem, describe_ref

__all__ = [
    "NAMESPACE_PATH",
    "AppSource",
    "DirectorySpec",
    "ManagedNamespace",
    "Selection",
    "SourceType",
    "select",
]

MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")
DIRECTORY_SUFFIXES: Final = (*MANIFEST_SUFFIXES, ".jsonnet")  # jsonnet: gitkrm.sync.jsonnet


@dataclass(frozen=True, slots=True)
class Selection:
    """What a path renders under Argo CD's rules (paths relative to the source path)."""

    kind: SourceType  # DIRECTORY or KUSTOMIZE, or AUTO for a chart at the top
    plain: tuple[str, ...] = ()  # a directory source's files, read as they are
    chart: bool = False  # a Chart.yaml at the top: the chart renders (gitkrm.charts)


def glob_regex(pattern: str, *, separator: str = "") -> re.Pattern[str]:
    """A gobwas glob (Argo CD's globs: `directory.include`/`exclude`, an AppProject's
    patterns) as a regular expression. Without a separator: `*` and `**` any run of
    characters (`/` too), `?` one character; with one (`/` for `sourceRepos`), `*` and `?`
    stop at it and `**` crosses it. `[...]`/`[!...]` a class, `{a,b}` alternation
    (nestable), `\\` escapes."""
    return _compiled(pattern, separator)


@lru_cache(maxsize=256)
def _compiled(pattern: str, separator: str = "") -> re.Pattern[str]:
    one = f"[^{re.escape(separator)}]" if separator else "."
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            stars = 1
            while i + 1 < len(pattern) and pattern[i + 1] == "*":
                i += 1
                stars += 1
            out.append(".*" if stars > 1 else one + "*")
        elif c == "?":
            out.append(one)
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                neg = body.startswith("!")
                body = body[1:] if neg else body
                out.append("[" + ("^" if neg else "") + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        return re.compile(re.escape(pattern) + r"\Z", re.S)  # unbalanced: literal
    return re.compile("".join(out) + r"\Z", re.S)


def matches(pattern: str, path: str) -> bool:
    return glob_regex(pattern).match(path) is not None


def _top_kustomization(paths: Collection[str]) -> bool:
    return any(name in paths for name in KUSTOMIZATION_NAMES)


def select(paths: Iterable[str], app: AppSource) -> Selection:
    """Argo CD's choice for a path whose files are `paths` (relative to the path)."""
    paths = set(paths)
    kind = app.source_type
    if kind is SourceType.AUTO:
        if _top_kustomization(paths):
            kind = SourceType.KUSTOMIZE  # Argo CD's discovery: it wins over a Chart.yaml
        elif CHART_FILE in paths:
            return Selection(SourceType.AUTO, chart=True)
        else:
            kind = SourceType.DIRECTORY
    if kind is SourceType.KUSTOMIZE:
        return Selection(SourceType.KUSTOMIZE)
    spec = app.directory
    keep = sorted(
        p
        for p in paths
        if p.endswith(DIRECTORY_SUFFIXES)
        and (spec.recurse or "/" not in p)
        and not (spec.exclude and matches(spec.exclude, p))
        and (not spec.include or matches(spec.include, p))
    )
    return Selection(SourceType.DIRECTORY, plain=tuple(keep))


def with_options(desired: Sequence[Desired], app: AppSource) -> list[Desired]:
    """The Application's sync options over every object; an object's own
    `argocd.argoproj.io/sync-options` annotation wins for the options it names."""
    if app.prune and not app.server_side and not app.force:
        return list(desired)
    out: list[Desired] = []
    for d in desired:
        own = _own_options(d) if peers.ARGO_SYNC_OPTIONS in d.applied else frozenset()
        changes: dict[str, bool] = {}
        if not app.prune and "prune" not in own:
            changes["prune"] = False
        if app.server_side and "serversideapply" not in own:
            changes["server_side"] = True
        if app.force and "force" not in own:
            changes["force"] = True
        out.append(d._replace(**changes) if changes else d)  # type: ignore[arg-type]
    return out


def deduplicated(desired: Sequence[Desired], warnings: list[Problem]) -> list[Desired]:
    """The objects, each once: the last of those with one key (Argo CD's choice), and a
    warning naming where the others were."""
    last = {d.key: i for i, d in enumerate(desired)}
    if len(last) == len(desired):
        return list(desired)
    kept: list[Desired] = []
    for i, d in enumerate(desired):
        if last[d.key] == i:
            kept.append(d)
            continue
        what = describe_ref(d.ref)
        at = desired[last[d.key]].location
        warnings.append(
            Problem(d.path, d.line or None, what,
                    f"appears again at {at}, which is kept (Argo CD's RepeatedResourceWarning)")
        )  # fmt: skip
    return kept


def _own_options(d: Desired) -> frozenset[str]:
    """The option names (lower case) an object's own sync-options annotation sets."""
    ann = (d.obj.get("metadata") or {}).get("annotations") or {}
    raw = ann.get(peers.ARGO_SYNC_OPTIONS)
    if not isinstance(raw, str):
        return frozenset()
    return frozenset(
        p.split("=", 1)[0].strip().lower() for p in raw.split(",") if "=" in p and p.strip()
    )
