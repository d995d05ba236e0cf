"""Render and validate one revision: a snapshot to its ordered desired objects.

Every `*.yaml`, `*.yml` and `*.json` file in path order (kustomization directories are
rendered by kustomize instead), each object prepared and admitted as the store would
admit it, custom resources against the CRDs of the revision and of the store, then the
checks across objects: duplicates, namespaces that exist nowhere, and the apply order.
A revision with any problem is refused whole; every problem is reported with its
file:line and object.

Incremental: parsed files are cached by blob id (and kustomize output by the blob ids of
its input tree), so a commit that changes one file parses one file. Entries unused for
a render are kept for one more (a `git revert` finds the previous blobs), then dropped.
With a `ParseCache` the parsed files are also kept on disk, so a new process parses only
the blobs no earlier one parsed (see `parsecache`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import posixpath
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import orjson

from gitkrm.charts.layout import ChartLayout, chart_layout
from gitkrm.errors import BadRequest, GitkrmError
from gitkrm.krm import GVK, GroupKind, Obj
from gitkrm.krm.names import TOTAL_ANNOTATION_SIZE_LIMIT
from gitkrm.schema import Registry
from gitkrm.source.snapshot import MODE_SYMLINK, FileEntry, Snapshot
from gitkrm.source.tree import DEFAULT_MAX_FILE_SIZE
from gitkrm.sync import appsource, keys, kustomize, kustomize_sops
from gitkrm.sync.cache import GenerationCache
from gitkrm.sync.desired import Desired, make_desired
from gitkrm.sync.order import Ordered, order
from gitkrm.sync.order_keys import SortKey
from gitkrm.sync.parse import (
    FileError,
    ParseContext,
    ParsedFile,
    ParsedObject,
    builtin_registry,
    parse_file,
    parse_object,
    prepare_unchecked,
    skips_dry_run,
)
from gitkrm.sync.parsecache import ParseCache
from gitkrm.sync.pool import gc_paused, parse_many
from gitkrm.sync.postbuild import PostBuild, Transformer
from gitkrm.sync.problems import Problem, cross_checks, describe_ref

if TYPE_CHECKING:
    from gitkrm.charts import ChartRenderer, Release
    from gitkrm.charts.spec import HelmSpec
    from gitkrm.sync.charts import ChartStage
    from gitkrm.sync.jsonnet import JsonnetStage
    from gitkrm.sync.overlay import OverlayStage
    from gitkrm.sync.overlay_spec import Overlay

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
_CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
_THREAD_READ_ABOVE = 64  # files; fewer are read on the loop (one cat-file round trip)


@dataclass(frozen=True, slots=True)
class RenderResult:
    """The desired objects of one revision in apply order, or why it can't be applied."""

    revision: str
    objects: tuple[Desired, ...]
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...]
    files: int  # manifest files, kustomizations built and chart templates rendered
    parsed: int  # objects read, valid or not
    registry: Registry
    kinds: Mapping[tuple[str, str], GVK] = field(default_factory=dict)  # (group, kind) used
    keys: frozenset[str] = frozenset()  # object keys (see objkey)
    read_ms: float = 0.0
    render_ms: float = 0.0
    files_parsed: int = 0  # files parsed by this render (found in no cache)
    releases: tuple[Release, ...] = ()  # the Helm charts rendered (see gitkrm.charts)
    remote: bool = False  # it fetched chart dependencies: the same revision may render anew

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class _Assembled:
    """One file's desired objects and problems (cached by path and content)."""

    desired: tuple[Desired, ...]
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...]


def _parse_key(path: str, entry: FileEntry) -> str:
    """Parsed files are cached by blob (and by format: the same bytes as .json parse
    differently)."""
    return entry.blob + ":json" if path.endswith(".json") else entry.blob


def _join(prefix: str, path: str) -> str:
    """A path of the source in repository coordinates."""
    return f"{prefix}/{path}" if prefix and path else (prefix or path)


def _shown(path: str, prefix: str) -> str:
    """A repository path as problems show it: relative to the source's path (`../` for a
    base outside it)."""
    if not prefix:
        return path
    if path.startswith(prefix + "/"):
        return path[len(prefix) + 1 :]
    return posixpath.relpath(path, prefix)


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


def _too_big_to_annotate(desired: Sequence[Desired]) -> list[Problem]:
    """Objects whose last-applied annotation would pass the 256 KiB limit of an object's
    annotations (large CRDs, as prometheus-operator's): client-side apply can't write them."""
    out: list[Problem] = []
    room = TOTAL_ANNOTATION_SIZE_LIMIT - len(keys.LAST_APPLIED)
    for d in desired:
        if len(d.applied) <= room // 4:  # characters: at most 4 bytes each
            continue
        size = len(d.applied.encode()) + len(keys.LAST_APPLIED)
        if size > TOTAL_ANNOTATION_SIZE_LIMIT:
            out.append(
                Problem(
                    d.path,
                    d.line or None,
                    describe_ref(d.ref),
                    f"too big for client-side apply: its {keys.LAST_APPLIED} annotation would "
                    f"be {size:,} bytes, over the {TOTAL_ANNOTATION_SIZE_LIMIT:,}-byte (256 KiB) "
                    "limit of an object's annotations; sync with --apply-mode server-side "
                    "(it writes no such annotation)",
                )
            )
    return out


class Renderer:
    """Renders snapshots of one source, caching parsed files across revisions."""

    def __init__(
        self,
        *,
        context: ParseContext,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        disk: ParseCache | None = None,
        annotation_limit: bool = False,
        charts: ChartRenderer | None = None,
        kube_version: str | None = None,
        app: appsource.AppSource | None = None,
        overlay: Overlay | None = None,
    ) -> None:
        """`annotation_limit`: client-side apply, whose last-applied annotation must fit
        the 256 KiB limit of an object's annotations (server-side apply writes none).
        `charts` renders the Helm charts (a default one when None); `kube_version` is the
        target's, for `.Capabilities` (the embedded target's when None). `app`: Argo CD's
        path rules and sync options (an interpreted Application: `appsource`).
        `overlay`: the kustomize transforms laid over every render (`gitkrm.sync.overlay`)."""
        self.context = context
        self.app = app
        self.annotation_limit = annotation_limit
        self._charts = charts
        self._chart_stage: ChartStage | None = None
        self._namespaces: dict[str, str] = {}  # a chart's output -> its release namespace
        self._remote = False  # the last render fetched chart dependencies
        self.kube_version = kube_version
        self.max_file_size = max_file_size
        self._files: GenerationCache[str, ParsedFile] = GenerationCache()
        # Parsed files on disk: read once, by the first render that misses in memory.
        self._disk = disk
        self._disk_entries: dict[str, ParsedFile] | None = None
        self._used: dict[str, ParsedFile] = {}  # this render's parsed files, by key
        self._files_parsed = 0
        self._kustomized: GenerationCache[str, ParsedFile] = GenerationCache()
        self._deferred: GenerationCache[tuple[bytes, str], ParsedObject] = GenerationCache()
        self._assembled: GenerationCache[tuple[str, str, str], _Assembled] = GenerationCache()
        self._registries: dict[str, Registry] = {}
        self._postbuild = Transformer(context=context)  # substitution and decryption
        self._overlay: OverlayStage | None = None
        self._jsonnet: JsonnetStage | None = None  # an Argo CD directory source's jsonnet
        self._helm: HelmSpec | None = None  # the charts' spec before the build environment
        self._variables: dict[str, str] | None = None  # Argo CD's build environment
        if overlay is not None and not overlay.empty:
            from gitkrm.sync.overlay import OverlayStage

            self._overlay = OverlayStage(overlay, context=context)
        # The last apply order: object key -> (position, sort key).
        self._positions: dict[str, tuple[int, SortKey]] = {}

    async def render(
        self,
        snapshot: Snapshot,
        *,
        store_crds: Sequence[Obj] = (),
        namespaces: Collection[str] | None = None,
        postbuild: PostBuild | None = None,
    ) -> RenderResult:
        """Render `snapshot`. `namespaces` are those that exist in the store (None: not
        checked); `store_crds` are the store's CRDs (their kinds can be used);
        `postbuild`: Flux's post-build steps (see `postbuild`)."""
        with gc_paused():  # thousands of acyclic objects: collections would only cost
            return await self._render(snapshot, store_crds, namespaces, postbuild)

    async def _render(
        self,
        snapshot: Snapshot,
        store_crds: Sequence[Obj],
        namespaces: Collection[str] | None,
        postbuild: PostBuild | None = None,
    ) -> RenderResult:
        start = time.perf_counter()
        problems: list[Problem] = []
        warnings: list[Problem] = []
        files = snapshot.files
        env = self.app.build_env if self.app is not None else None
        self._variables = env.variables(snapshot.revision) if env is not None else None
        read_ms = 0.0
        layout = kustomize.Layout()
        tree = snapshot.tree
        prefix = tree.root if tree is not None else ""
        selected: tuple[str, ...] | None = None  # Argo CD's directory source: these files
        if self.app is None:
            units = kustomize.units(kustomize.kustomization_files(files))
            charts = chart_layout(files)
        else:
            units, charts, selected = self._argocd(files, problems)
        if selected is not None:
            plain = list(selected)
        elif units.dirs:
            t = time.perf_counter()
            layout = kustomize.layout(
                set(tree.files if tree is not None else files),
                [_join(prefix, d) for d in units.dirs],
                snapshot.read_tree,
                refused=tree.refused if tree is not None else None,
            )
            read_ms += (time.perf_counter() - t) * 1000
            problems.extend(
                Problem(_shown(p, prefix), None, None, m) for p, m in layout.problems.items()
            )
            plain = sorted(
                p
                for p in files
                if p.endswith(MANIFEST_SUFFIXES) and units.plain(p) and not charts.owned(p)
            )
        else:
            plain = sorted(
                p
                for p in files
                if p.endswith(MANIFEST_SUFFIXES) and not kustomize.hidden(p) and not charts.owned(p)
            )
        jsonnet = [p for p in plain if p.endswith(".jsonnet")]  # only Argo CD selects them
        if jsonnet:
            plain = [p for p in plain if not p.endswith(".jsonnet")]
        entries: dict[str, tuple[str, FileEntry]] = {}  # path -> (path read, entry read)
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
            if entry.size > self.max_file_size:
                problems.append(
                    Problem(
                        path,
                        None,
                        None,
                        f"file is {entry.size:,} bytes, over the limit of {self.max_file_size:,}",
                    )
                )
                continue
            entries[path] = (source, entry)
        self._files_parsed = 0
        parsed, ms = await self._parse(snapshot, entries)
        read_ms += ms
        # (path shown, cache key of its content, parsed file)
        outputs: list[tuple[str, str, ParsedFile]] = [
            (p, entries[p][1].blob, parsed[p]) for p in entries
        ]
        if jsonnet:
            evaluated, failed = await self._jsonnet_stage().outputs(
                jsonnet, snapshot, prefix=prefix, variables=self._variables
            )
            outputs.extend(evaluated)
            problems.extend(failed)
        for root in layout.roots:
            kpath = layout.kfiles[root]
            if kpath in layout.problems:
                continue
            shown = _shown(kpath, prefix)
            pf, key, ms = await self._kustomize(snapshot, root, shown, layout, postbuild)
            read_ms += ms
            outputs.append((shown, key, pf))
        outputs = self._postbuild.apply(outputs, postbuild or PostBuild(), problems)
        releases: tuple[Release, ...] = ()
        self._namespaces = {}
        self._remote = False
        templates = 0  # the charts' rendered templates: files too (validate counts them)
        if charts.roots:
            before = len(outputs)
            releases = await self._render_charts(
                snapshot, charts, outputs, store_crds, problems, warnings
            )
            templates = len(outputs) - before
        if self._overlay is not None:
            # Over the charts' objects too: a HelmRelease's postRenderers.
            outputs = await self._overlay.apply(
                outputs, snapshot, problems, postbuild, variables=self._variables,
                annotations=env is not None and env.annotations,
            )  # fmt: skip
        if self.app is not None and self.app.create_namespace is not None:
            self._create_namespace(self.app.create_namespace, outputs)
        registry, fingerprint = self._registry(outputs, store_crds, problems)
        desired: list[Desired] = []
        count = 0
        for path, key, pf in outputs:
            count += len(pf.objects)
            if pf.error is not None:
                err = pf.error
                problems.append(Problem(path, err.line, err.object, err.message))
                continue
            ckey = (path, key, fingerprint if pf.deferred else "")
            done = self._assembled.get(ckey)
            if done is None:
                done = self._assemble(path, pf.objects, registry, fingerprint)
                self._assembled.put(ckey, done)
            desired.extend(done.desired)
            problems.extend(done.problems)
            warnings.extend(done.warnings)
        if self.app is not None:
            desired = appsource.with_options(desired, self.app)
        if self.annotation_limit:
            problems.extend(_too_big_to_annotate(desired))
        kinds, object_keys = cross_checks(desired, namespaces, problems)
        if self.app is not None and self.app.project is not None:
            from gitkrm.sync import appproject  # interpreted Applications only

            problems.extend(appproject.check(desired, self.app.project))
        ordered = self._order(desired)
        for d, message in ordered.errors:
            problems.append(Problem(d.path, d.line or None, describe_ref(d.ref), message))
        for cache in (self._files, self._kustomized, self._deferred, self._assembled):
            cache.rotate()
        if self._disk is not None:
            if self._files_parsed:
                self._disk.save(self.context, self._used)
            self._used = {}
            self._disk_entries = {}  # what it held is in memory now, for two renders
        return RenderResult(
            revision=snapshot.revision,
            objects=ordered.objects,
            problems=tuple(problems),
            warnings=tuple(warnings),
            files=len(entries) + len(layout.roots) + templates,
            parsed=count,
            registry=registry,
            kinds=kinds,
            keys=object_keys,
            read_ms=read_ms,
            render_ms=(time.perf_counter() - start) * 1000 - read_ms,
            files_parsed=self._files_parsed,
            releases=releases,
            remote=self._remote,
        )

    def _argocd(
        self, files: Collection[str], problems: list[Problem]
    ) -> tuple[kustomize.Units, ChartLayout, tuple[str, ...] | None]:
        """Argo CD's choice for the path (`appsource`): the kustomization built, the chart
        rendered, or the files of a directory source read as they are."""
        assert self.app is not None
        sel = appsource.select(files, self.app)
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

    def _jsonnet_stage(self) -> JsonnetStage:
        if self._jsonnet is None:
            from gitkrm.sync.jsonnet import JsonnetStage

            assert self.app is not None
            self._jsonnet = JsonnetStage(
                self.app.directory.jsonnet, context=self.context,
                max_file_size=self.max_file_size,
            )  # fmt: skip
        return self._jsonnet

    def _create_namespace(
        self, ns: appsource.ManagedNamespace, outputs: list[tuple[str, str, ParsedFile]]
    ) -> None:
        """`CreateNamespace=true`: the destination Namespace, unless the revision holds it."""
        for _, _, out in outputs:
            if any(po.kind == "Namespace" and po.name == ns.name for po in out.objects):
                return
        data = ns.manifest()
        key = hashlib.sha256(data).hexdigest()
        pf = self._kustomized.get(key)
        if pf is None:
            pf = parse_file(
                appsource.NAMESPACE_PATH, data, ctx=self.context, registry=builtin_registry()
            )
            self._kustomized.put(key, pf)
        outputs.append((appsource.NAMESPACE_PATH, key, pf))

    async def _render_charts(
        self,
        snapshot: Snapshot,
        charts: ChartLayout,
        outputs: list[tuple[str, str, ParsedFile]],
        store_crds: Sequence[Obj],
        problems: list[Problem],
        warnings: list[Problem],
    ) -> tuple[Release, ...]:
        """Render the charts (`gitkrm.sync.charts`), their API versions being those of the
        built-in kinds, the store's CRDs and the revision's other CRDs."""
        from gitkrm.sync.charts import ChartStage

        if self._chart_stage is None:
            if self._charts is None:
                from gitkrm.charts import ChartRenderer

                self._charts = ChartRenderer(default_namespace=self.context.default_namespace)
            self._chart_stage = ChartStage(
                self._charts, context=self.context, max_file_size=self.max_file_size
            )
        if self._variables is not None:  # an Argo CD Application's build environment
            from gitkrm.sync import buildenv

            assert self._charts is not None
            self._helm = self._helm or self._charts.spec
            self._charts.respec(buildenv.helm(self._helm, self._variables))
        registry, _ = self._registry(outputs, store_crds, [])
        done = await self._chart_stage.render(
            snapshot, charts, registry=registry, kube_version=self.kube_version
        )
        outputs.extend(done.outputs)
        problems.extend(done.problems)
        warnings.extend(done.warnings)
        self._namespaces = done.namespaces
        self._remote = done.remote
        return tuple(done.releases)

    def mark_installed(self, releases: Sequence[Release]) -> None:
        """The releases were applied: the next render of each is an upgrade."""
        if self._charts is not None and releases:
            self._charts.mark_installed(releases)

    def _order(self, desired: Sequence[Desired]) -> Ordered:
        """The apply order; when only contents changed (same objects, same sort keys, no
        dependencies), the last order is reused instead of sorting again."""
        positions = self._positions
        if len(positions) == len(desired) and not any(d.depends_on for d in desired):
            slots: list[Desired | None] = [None] * len(desired)
            for d in desired:
                hit = positions.get(d.key)
                if hit is None or hit[1] != d.order_key or slots[hit[0]] is not None:
                    break
                slots[hit[0]] = d
            else:
                return Ordered(tuple(slots), ())  # type: ignore[arg-type]  # all filled
        result = order(desired)
        positions = {d.key: (i, d.order_key) for i, d in enumerate(result.objects)}
        # Only a clean order is a hint (duplicates would leave holes in it).
        ok = not result.errors and len(positions) == len(result.objects)
        self._positions = positions if ok else {}
        return result

    async def _parse(
        self, snapshot: Snapshot, entries: Mapping[str, tuple[str, FileEntry]]
    ) -> tuple[dict[str, ParsedFile], float]:
        out: dict[str, ParsedFile] = {}
        todo: list[str] = []
        cache = self._files
        for path, (_, entry) in entries.items():
            hit = cache.get(_parse_key(path, entry))
            if hit is None:
                todo.append(path)
            else:
                out[path] = hit
        if self._disk is not None:
            todo = self._parse_from_disk(todo, entries, out)
            self._used = {_parse_key(p, e): out[p] for p, (_, e) in entries.items() if p in out}
        if not todo:
            return out, 0.0
        self._files_parsed = len(todo)
        t = time.perf_counter()
        sources = {entries[p][0] for p in todo}
        if len(sources) > _THREAD_READ_ABOVE:
            contents = await asyncio.to_thread(snapshot.read_many, sources)
        else:
            contents = snapshot.read_many(sources)
        read_ms = (time.perf_counter() - t) * 1000

        def early(items: Sequence[tuple[str, bytes]], parsed: Sequence[ParsedFile]) -> None:
            """Assemble built-in kinds while workers parse the rest (it needs no CRDs)."""
            for (path, _), pf in zip(items, parsed, strict=True):
                if pf.error is None and not pf.deferred:
                    key = (path, entries[path][1].blob, "")
                    if self._assembled.get(key) is None:
                        self._assembled.put(key, self._assemble(path, pf.objects, None, ""))

        results = await parse_many(
            [(p, contents[entries[p][0]]) for p in todo], self.context, on_chunk=early
        )
        for path, pf in zip(todo, results, strict=True):
            key = _parse_key(path, entries[path][1])
            self._files.put(key, pf)
            if self._disk is not None:
                self._used[key] = pf
            out[path] = pf
        return out, read_ms

    def _parse_from_disk(
        self,
        todo: list[str],
        entries: Mapping[str, tuple[str, FileEntry]],
        out: dict[str, ParsedFile],
    ) -> list[str]:
        """Take what the disk cache has of `todo` (into `out` and memory); the rest."""
        if not todo:
            return todo
        if self._disk_entries is None:
            assert self._disk is not None
            self._disk_entries = self._disk.load(self.context)
        stored = self._disk_entries
        if not stored:
            return todo
        rest: list[str] = []
        for path in todo:
            key = _parse_key(path, entries[path][1])
            hit = stored.get(key)
            if hit is None:
                rest.append(path)
            else:
                self._files.put(key, hit)
                out[path] = hit
        return rest

    async def _kustomize(
        self,
        snapshot: Snapshot,
        root: str,
        kpath: str,
        layout: kustomize.Layout,
        postbuild: PostBuild | None = None,
    ) -> tuple[ParsedFile, str, float]:
        files = snapshot.tree.files if snapshot.tree is not None else snapshot.files
        needed = sorted(layout.needs[root])
        key = kustomize.tree_key(root, ((p, files[p].blob) for p in needed))
        if postbuild is not None and postbuild.decrypt:  # inputs may decrypt (kustomize_sops)
            key += ":" + postbuild.digest
        hit = self._kustomized.get(key)
        if hit is not None:
            return hit, key, 0.0
        t = time.perf_counter()
        contents = snapshot.read_tree(needed)
        read_ms = (time.perf_counter() - t) * 1000
        try:
            out = await kustomize_sops.build(
                root, contents, postbuild, root_only=self.app is not None
            )
        except BadRequest as e:
            pf = ParsedFile(error=FileError(None, None, e.message))
        else:
            pf = parse_file(kpath, out, ctx=self.context, registry=builtin_registry())
            # Lines of kustomize's output mean nothing in the repository.
            pf = ParsedFile(
                objects=tuple(po._replace(line=0) for po in pf.objects),
                error=None if pf.error is None else FileError(None, None, pf.error.message),
                deferred=pf.deferred,
                text=pf.text,
            )
        self._kustomized.put(key, pf)
        return pf, key, read_ms

    def _registry(
        self,
        outputs: Sequence[tuple[str, str, ParsedFile]],
        store_crds: Sequence[Obj],
        problems: list[Problem],
    ) -> tuple[Registry, str]:
        """A registry of the built-in kinds, the store's CRDs and the revision's CRDs."""
        crds = [
            (path, po)
            for path, _, pf in outputs
            for po in pf.objects
            if po.kind == _CRD[1] and po.api_version == _CRD[0] and not po.problems
        ]
        h = hashlib.sha256()
        for crd in sorted(store_crds, key=lambda c: str(c.get("metadata", {}).get("name"))):
            md = crd.get("metadata") or {}
            h.update(f"{md.get('name')}\0{md.get('resourceVersion')}\0".encode())
        h.update(b"--")
        for _, po in crds:
            h.update(po.doc)
        fingerprint = h.hexdigest()
        registry = self._registries.get(fingerprint)
        if registry is not None:
            return registry, fingerprint
        registry = Registry.builtin()
        mine = {po.name for _, po in crds}
        for crd in store_crds:
            if (crd.get("metadata") or {}).get("name") in mine:
                continue
            try:
                registry.register_crd(orjson.loads(orjson.dumps(crd)))
            except GitkrmError:
                continue  # the store serves it anyway; its kinds are unknown here
        for path, po in crds:
            try:
                registry.register_crd(orjson.loads(po.doc))
            except GitkrmError as e:
                problems.append(Problem(path, po.line or None, po.describe(), e.message))
        self._registries = {fingerprint: registry}  # one kept: CRD sets rarely change
        return registry, fingerprint

    def _assemble(
        self,
        path: str,
        objects: Sequence[ParsedObject],
        registry: Registry | None,
        fingerprint: str,
    ) -> _Assembled:
        """One file's desired objects (`registry` may be None when all kinds are built in)."""
        desired: list[Desired] = []
        problems: list[Problem] = []
        warnings: list[Problem] = []
        for po in objects:
            if not po.resolved:
                assert registry is not None
                po = self._resolve(po, registry, fingerprint, self._namespaces.get(path))
            line = po.line or None
            if po.problems:
                problems.extend(Problem(path, line, po.describe(), m) for m in po.problems)
                continue
            warnings.extend(Problem(path, line, po.describe(), w) for w in po.warnings)
            d, msgs = make_desired(
                doc=po.doc,
                api_version=po.api_version,
                kind=po.kind,
                name=po.name,
                namespace=po.namespace,
                path=path,
                line=po.line,
            )
            if d is None:
                problems.extend(Problem(path, line, po.describe(), m) for m in msgs)
            else:
                desired.append(d)
        return _Assembled(tuple(desired), tuple(problems), tuple(warnings))

    def _resolve(
        self, po: ParsedObject, registry: Registry, fingerprint: str, namespace: str | None
    ) -> ParsedObject:
        """A custom resource, prepared against the revision's registry (cached); `namespace`
        is the default of its file when it is not the source's (a chart's release)."""
        key = (po.doc, fingerprint + (namespace or ""))
        ctx = self.context
        if namespace is not None:
            ctx = dataclasses.replace(ctx, default_namespace=namespace)
        hit = self._deferred.get(key)
        if hit is None:
            hit = parse_object(
                orjson.loads(po.doc),
                line=po.line,
                index=po.document,
                ctx=ctx,
                registry=registry,
            )
            if not hit.resolved and skips_dry_run(po.doc):
                hit = prepare_unchecked(po, self.context)
            elif not hit.resolved:
                hit = ParsedObject(
                    po.doc,
                    po.line,
                    po.document,
                    po.api_version,
                    po.kind,
                    po.name,
                    po.namespace,
                    False,
                    (_unknown_kind(po, registry),),
                )
            self._deferred.put(key, hit)
        return hit


def _unknown_kind(po: ParsedObject, registry: Registry) -> str:
    """Why a custom resource has no kind to be admitted as: no CRD of its group and kind,
    or one that does not serve its version (a Flux `helm.toolkit.fluxcd.io/v2beta1`
    HelmRelease where v2 and v2beta2 are served)."""
    group = po.api_version.rpartition("/")[0]
    served = [i.version for i in registry.versions_of(GroupKind(group=group, kind=po.kind))]
    if served:
        return (
            f'unknown kind "{po.kind}" in version "{po.api_version}": its '
            f"CustomResourceDefinition serves {', '.join(served)}, not this version"
        )
    where = f" (group {group})" if group else ""
    return (
        f'unknown kind "{po.kind}" in version "{po.api_version}": no '
        f"CustomResourceDefinition for it{where} in this revision or in the store"
    )
