"""Render and validate one revision: a snapshot to its ordered desired objects.

Every `*.yaml`, `*.yml` and `*.json` file in path order (kustomization directories are
rendered by kustomize instead; `render_select` says which files a render reads), each
object prepared and admitted as the store would admit it (`render_assemble`), custom
resources against the CRDs of the revision and of the store, then the checks across
objects: duplicates, namespaces that exist nowhere, and the apply order. A revision with
any problem is refused whole; every problem is reported with its file:line and object.

Incremental: parsed files are cached by blob id (and kustomize output by the blob ids of
its input tree), in memory and, with a `ParseCache`, on disk (`render_files`), so a
commit that changes one file parses one file, and a new process parses only the blobs no
earlier one parsed.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gitkrm.charts.layout import ChartLayout
from gitkrm.krm import GVK, Obj
from gitkrm.schema import Registry
from gitkrm.source.snapshot import Snapshot
from gitkrm.source.tree import DEFAULT_MAX_FILE_SIZE
from gitkrm.sync import appsource
from gitkrm.sync.desired import Desired
from gitkrm.sync.order import Ordered, order
from gitkrm.sync.order_keys import SortKey
from gitkrm.sync.parse import ParseContext, ParsedFile
from gitkrm.sync.parsecache import ParseCache
from gitkrm.sync.pool import gc_paused
from gitkrm.sync.postbuild import PostBuild, Transformer
from gitkrm.sync.problems import Problem, cross_checks, describe_ref
from gitkrm.sync.render_assemble import Assembler, too_big_to_annotate
from gitkrm.sync.render_files import ParsedFiles
from gitkrm.sync.render_select import select, shown

if TYPE_CHECKING:
    from gitkrm.charts import ChartRenderer, Release
    from gitkrm.charts.spec import HelmSpec
    from gitkrm.sync.charts import ChartStage
    from gitkrm.sync.jsonnet import JsonnetStage
    from gitkrm.sync.overlay import OverlayStage
    from gitkrm.sync.overlay_spec import Overlay


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
        self._remote = False  # the last render fetched chart dependencies
        self.kube_version = kube_version
        self.max_file_size = max_file_size
        # An overlay's namespace is kustomize's to set. Its build must see an object that
        # names no namespace as Flux's build sees it, in `default` (kustomize's reading of
        # none), not already in the target namespace: a ClusterRoleBinding's subject
        # `{name: sa, namespace: default}` then still names the ServiceAccount, and is
        # renamed and moved with it.
        read = context
        if overlay is not None and overlay.namespace:
            read = replace(context, default_namespace="default")
        self._files = ParsedFiles(context=read, disk=disk)
        self._assembler = Assembler(context=context)
        self._postbuild = Transformer(context=read)  # substitution and decryption
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
        env = self.app.build_env if self.app is not None else None
        self._variables = env.variables(snapshot.revision) if env is not None else None
        chosen = select(snapshot, app=self.app, max_file_size=self.max_file_size, problems=problems)
        prefix, entries, layout = chosen.prefix, chosen.entries, chosen.layout
        read_ms = chosen.read_ms
        parsed, ms = await self._files.parse(snapshot, entries, early=self._assembler.early)
        read_ms += ms
        # (path shown, cache key of its content, parsed file)
        outputs: list[tuple[str, str, ParsedFile]] = [
            (p, entries[p][1].blob, parsed[p]) for p in entries
        ]
        if chosen.jsonnet:
            evaluated, failed = await self._jsonnet_stage().outputs(
                chosen.jsonnet, snapshot, prefix=prefix, variables=self._variables
            )
            outputs.extend(evaluated)
            problems.extend(failed)
        for root in layout.roots:
            kpath = layout.kfiles[root]
            if kpath in layout.problems:
                continue
            kpath = shown(kpath, prefix)
            pf, key, ms = await self._files.kustomize(
                snapshot, root, kpath, layout, postbuild, root_only=self.app is not None
            )
            read_ms += ms
            outputs.append((kpath, key, pf))
        outputs = self._postbuild.apply(outputs, postbuild or PostBuild(), problems)
        releases: tuple[Release, ...] = ()
        self._assembler.namespaces = {}
        self._remote = False
        templates = 0  # the charts' rendered templates: files too (validate counts them)
        if chosen.charts.roots:
            before = len(outputs)
            releases = await self._render_charts(
                snapshot, chosen.charts, outputs, store_crds, problems, warnings
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
        registry, fingerprint = self._assembler.registry(outputs, store_crds, problems)
        desired, count = self._assembler.desired(outputs, registry, fingerprint, problems, warnings)
        if self.app is not None:
            desired = appsource.with_options(appsource.deduplicated(desired, warnings), self.app)
        if self.annotation_limit:
            problems.extend(too_big_to_annotate(desired))
        kinds, object_keys = cross_checks(desired, namespaces, problems)
        if self.app is not None and self.app.project is not None:
            from gitkrm.sync import appproject  # interpreted Applications only

            problems.extend(appproject.check(desired, self.app.project))
        ordered = self._order(desired)
        for d, message in ordered.errors:
            problems.append(Problem(d.path, d.line or None, describe_ref(d.ref), message))
        self._files.finish()
        self._assembler.rotate()
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
            files_parsed=self._files.parsed,
            releases=releases,
            remote=self._remote,
        )

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
        key, pf = self._files.generated(appsource.NAMESPACE_PATH, ns.manifest())
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
        registry, _ = self._assembler.registry(outputs, store_crds, [])
        done = await self._chart_stage.render(
            snapshot, charts, registry=registry, kube_version=self.kube_version
        )
        outputs.extend(done.outputs)
        problems.extend(done.problems)
        warnings.extend(done.warnings)
        self._assembler.namespaces = done.namespaces
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
