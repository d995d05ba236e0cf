"""The charts of a revision, rendered (by `gitkrm.charts`) and parsed like any file.

`render.Renderer` hands over the chart directories of a snapshot; each becomes one release,
each rendered template one parsed "file" named by its path in the repository (its lines are
those of Helm's output, so they are dropped, as for kustomize). A chart that Helm can't load
or render is one problem naming the chart and Helm's message (which names the template); the
revision is then refused whole, like any other problem.
"""

from __future__ import annotations

import dataclasses
import hashlib
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

import yaml

from gitkrm.charts import archive
from gitkrm.charts.layout import CHART_FILE, LOCK_FILE, ChartLayout
from gitkrm.charts.library import ChartError
from gitkrm.charts.model import Capabilities, Release, chart_digest
from gitkrm.charts.release import ChartRenderer
from gitkrm.charts.repository import Dependency, Resolved, missing_dependencies, yaml_mapping
from gitkrm.charts.spec import EMBEDDED_KUBE_VERSION
from gitkrm.schema import Registry
from gitkrm.source.snapshot import MODE_SYMLINK, FileEntry, Snapshot
from gitkrm.sync.cache import GenerationCache
from gitkrm.sync.parse import FileError, ParseContext, ParsedFile
from gitkrm.sync.pool import parse_many
from gitkrm.sync.problems import Problem

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(slots=True)
class Charted:
    """What the charts of one revision gave: parsed outputs (path, cache key, file)."""

    outputs: list[tuple[str, str, ParsedFile]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    releases: list[Release] = field(default_factory=list)
    namespaces: dict[str, str] = field(default_factory=dict)  # output path -> release's
    remote: bool = False  # a chart has dependencies from a repository (fetched each render)
    warnings: list[Problem] = field(default_factory=list)


def api_versions(registry: Registry) -> tuple[str, ...]:
    """`.Capabilities.APIVersions`: every served `group/version` and `group/version/Kind`."""
    out: set[str] = set()
    for info in registry.infos():
        gv = f"{info.group}/{info.version}" if info.group else info.version
        out.add(gv)
        out.add(f"{gv}/{info.kind}")
    return tuple(sorted(out))


class ChartStage:
    """Renders and parses a source's charts, caching parsed outputs by their text."""

    def __init__(self, charts: ChartRenderer, *, context: ParseContext, max_file_size: int):
        self.charts = charts
        self.context = context
        self.max_file_size = max_file_size
        self._parsed: GenerationCache[str, ParsedFile] = GenerationCache()
        self._deps: dict[tuple[str, str, tuple[str, ...]], list[Dependency]] = {}
        self._crd_apis: dict[str, tuple[str, ...]] = {}  # a crds/ file's blob -> API versions
        self._packed: dict[tuple[str, tuple[tuple[str, str], ...]], Resolved] = {}  # file://

    async def render(
        self,
        snapshot: Snapshot,
        layout: ChartLayout,
        *,
        registry: Registry,
        kube_version: str | None,
    ) -> Charted:
        out = Charted()
        files = snapshot.files
        capabilities = Capabilities(
            kube_version=kube_version or EMBEDDED_KUBE_VERSION, api_versions=api_versions(registry)
        )
        charts: list[tuple[str, str, list[str], list[Resolved], str]] = []
        grouped = layout.grouped(files)
        outside = self._outside(snapshot)
        outside_paths = [p[1:] for p in outside]
        for root in layout.roots:
            base = f"{root}/" if root else ""
            rel = self._own(grouped[root])
            problem = self._check(root, base, rel, snapshot)
            if problem is not None:
                out.problems.append(problem)
                continue
            try:
                fetched = await self._dependencies(snapshot, base, rel, root or ".")
            except ChartError as e:
                out.problems.append(Problem(base + CHART_FILE, None, None, e.message))
                continue
            out.remote = out.remote or bool(fetched)
            digest = chart_digest(
                [
                    *((p, files[base + p].blob) for p in rel),
                    *((r.filename, r.digest) for r in fetched),
                    *((p, e.blob) for p, e in outside.items()),
                ]
            )
            charts.append((root, base, rel, fetched, digest))
        # Helm installs a chart's crds/ before rendering it: its templates see their kinds.
        caps = {
            root: self._with_own_crds(capabilities, snapshot, base, rel)
            for root, base, rel, _, _ in charts
        }
        # The charts rendered before need no file; the others are read in one go.
        wanted = [
            base + p
            for root, base, rel, _, digest in charts
            if not self.charts.cached(directory=root, digest=digest, capabilities=caps[root])
            for p in rel
        ]
        contents = snapshot.read_many(wanted) if wanted else {}
        if wanted and outside:
            contents |= {"/" + p: b for p, b in snapshot.read_tree(outside_paths).items()}
        todo: dict[str, list[tuple[str, bytes, str]]] = {}  # namespace -> (path, text, key)
        for root, base, rel, fetched, digest in charts:

            def read(
                rel: Sequence[str] = rel, base: str = base, fetched: list[Resolved] = fetched
            ) -> dict[str, bytes]:
                missing = [base + p for p in rel if base + p not in contents]
                got = {**contents, **(snapshot.read_many(missing) if missing else {})}
                if outside and any(p not in got for p in outside):
                    got |= {"/" + p: b for p, b in snapshot.read_tree(outside_paths).items()}
                return (
                    {p: got[base + p] for p in rel}
                    | {r.filename: r.data for r in fetched}
                    | {p: got[p] for p in outside}
                )

            try:
                rendered = self.charts.render(
                    directory=root, digest=digest, read=read, capabilities=caps[root]
                )
            except ChartError as e:
                out.problems.append(Problem(base + CHART_FILE, None, None, e.message))
                continue
            out.releases.append(rendered.release)
            out.warnings.extend(Problem(p, None, None, m) for p, m in rendered.warnings)
            # Objects without a namespace land in the release's, as with `helm install`.
            ns = rendered.release.namespace
            for path, text in rendered.manifests:
                key = f"helm:{ns}:" + hashlib.sha256(text).hexdigest()
                out.outputs.append((path, key, _PENDING))
                out.namespaces[path] = ns
                if self._parsed.get(key) is None:
                    todo.setdefault(ns, []).append((path, text, key))
        for ns, items in todo.items():
            ctx = dataclasses.replace(self.context, default_namespace=ns)
            parsed = await parse_many([(p, t) for p, t, _ in items], ctx)
            for (_, _, key), pf in zip(items, parsed, strict=True):
                self._parsed.put(key, _without_lines(pf))
        out.outputs = [(p, k, self._parsed.get(k) or pf) for p, k, pf in out.outputs]
        self._parsed.rotate()
        self.charts.rotate()
        return out

    def _outside(self, snapshot: Snapshot) -> dict[str, FileEntry]:
        """The value files and file parameters named from the repository's top (`/path`,
        an Argo CD Application's outside its chart's directory) that the revision holds,
        by that name: the chart sees each under it (the source lists the whole tree when
        its Helm spec names one: `HelmSpec.outside_chart`)."""
        spec = self.charts.spec
        tree = snapshot.tree.files if snapshot.tree is not None else {}
        named = [*spec.value_files, *(f for _, f in spec.file_parameters)]
        return {f: tree[f[1:]] for f in named if f.startswith("/") and f[1:] in tree}

    def _own(self, rel: list[str]) -> list[str]:
        """A chart's files: those of another source mounted at `$ref/` (an Argo CD
        multi-source Application's values) only where a value file or file parameter
        names them, so nothing else of that repository is read."""
        if not any(p.startswith("$") for p in rel):
            return rel
        spec = self.charts.spec
        named = {posixpath.normpath(f) for f in spec.value_files} | {
            posixpath.normpath(f) for _, f in spec.file_parameters
        }
        return [p for p in rel if not p.startswith("$") or p in named]

    def _with_own_crds(
        self, capabilities: Capabilities, snapshot: Snapshot, base: str, rel: Sequence[str]
    ) -> Capabilities:
        """`capabilities` with the API versions of the chart's own `crds/` (and its
        subcharts'), read from the repository (cached by blob)."""
        paths = [
            base + p
            for p in rel
            if (p.startswith("crds/") or "/crds/" in p) and p.endswith((".yaml", ".yml", ".json"))
        ]
        if not paths:
            return capabilities
        files = snapshot.files
        todo = [p for p in paths if files[p].blob not in self._crd_apis]
        if todo:
            for p, data in snapshot.read_many(todo).items():
                self._crd_apis[files[p].blob] = crd_api_versions(data)
        own = {a for p in paths for a in self._crd_apis[files[p].blob]}
        if own <= set(capabilities.api_versions):
            return capabilities
        return Capabilities(
            kube_version=capabilities.kube_version,
            api_versions=tuple(sorted({*capabilities.api_versions, *own})),
        )

    async def _dependencies(
        self, snapshot: Snapshot, base: str, rel: Sequence[str], where: str
    ) -> list[Resolved]:
        """The chart's dependencies that are not in `charts/`, fetched (versions picked
        again at every render: a range follows its repository)."""
        files = snapshot.files
        meta = files.get(base + CHART_FILE)
        lock = files.get(base + LOCK_FILE)
        if meta is None:
            return []
        heads = tuple(sorted({p.split("/")[1] for p in rel if p.startswith("charts/")}))
        key = (meta.blob, lock.blob if lock is not None else "", heads)
        deps = self._deps.get(key)
        if deps is None:
            paths = [base + CHART_FILE] + ([base + LOCK_FILE] if lock is not None else [])
            contents = snapshot.read_many(paths)
            deps = missing_dependencies(
                contents[base + CHART_FILE],
                contents.get(base + LOCK_FILE),
                rel,
                chart=where,
            )
            self._deps[key] = deps
        return [
            self._local(snapshot, base, d, where)
            if d.repository.startswith("file://")
            else await self.charts.fetcher.fetch(d, chart=where)
            for d in deps
        ]

    def _local(self, snapshot: Snapshot, base: str, dep: Dependency, where: str) -> Resolved:
        """A `file://` dependency, as `helm dependency build` packs it: the chart directory
        it names (relative to the chart's), from this revision, never out of the source's
        path (its `charts/` then holds it vendored)."""
        at = posixpath.normpath(posixpath.join(base, dep.repository[len("file://") :]))
        if at == ".." or at.startswith(("../", "/")):
            raise ChartError(
                where,
                f"dependency {dep.name!r} ({dep.repository}) is outside the source's path: "
                "vendor it in charts/",
            )
        prefix = "" if at == "." else at + "/"
        entries = {p[len(prefix) :]: e for p, e in snapshot.files.items() if p.startswith(prefix)}
        if CHART_FILE not in entries:
            raise ChartError(
                where, f"dependency {dep.name!r} ({dep.repository}): no {CHART_FILE} in {at!r}"
            )
        problem = self._check(at, prefix, list(entries), snapshot)  # symlinks, sizes
        if problem is not None:
            raise ChartError(where, f"dependency {dep.name!r}: {problem}")
        key = (at, tuple(sorted((p, e.blob) for p, e in entries.items())))
        hit = self._packed.get(key)
        if hit is None:
            got = snapshot.read_many([prefix + p for p in entries])
            files = {p: got[prefix + p] for p in entries}
            meta = yaml_mapping(files[CHART_FILE], CHART_FILE, at)
            name, version = str(meta.get("name") or dep.name), str(meta.get("version") or "0")
            data = archive.pack(name, archive.kept(files))
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            hit = self._packed[key] = Resolved(dep.name, version, digest, data)
        return hit

    def _check(
        self, root: str, base: str, rel: Sequence[str], snapshot: Snapshot
    ) -> Problem | None:
        for p in rel:
            entry = snapshot.files[base + p]
            if entry.mode == MODE_SYMLINK:
                return Problem(
                    base + p, None, None, "a symlink inside a Helm chart is not followed"
                )
            if entry.size > self.max_file_size:
                return Problem(
                    base + p,
                    None,
                    None,
                    f"file is {entry.size:,} bytes, over the limit of {self.max_file_size:,}",
                )
        return None


def crd_api_versions(data: bytes) -> tuple[str, ...]:
    """`group/version` and `group/version/Kind` of the served versions of the CRDs in a
    file (unreadable documents are left to the render to report)."""
    out: list[str] = []
    try:
        docs = list(yaml.load_all(data, Loader=_Loader))
    except yaml.YAMLError:
        return ()
    for d in docs:
        spec = d.get("spec") if isinstance(d, dict) else None
        if not isinstance(spec, dict) or d.get("kind") != "CustomResourceDefinition":
            continue
        group = str(spec.get("group") or "")
        kind = str((spec.get("names") or {}).get("kind") or "")
        for v in spec.get("versions") or ():
            if isinstance(v, dict) and v.get("served", True) and v.get("name"):
                out += [f"{group}/{v['name']}", f"{group}/{v['name']}/{kind}"]
    return tuple(out)


_PENDING = ParsedFile(error=FileError(None, None, "not parsed"))  # replaced before returning


def _without_lines(pf: ParsedFile) -> ParsedFile:
    """Lines of Helm's output mean nothing in the repository (the template path is kept)."""
    return ParsedFile(
        objects=tuple(po._replace(line=0) for po in pf.objects),
        error=None if pf.error is None else FileError(None, pf.error.object, pf.error.message),
        deferred=pf.deferred,
    )
