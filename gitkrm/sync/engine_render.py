"""The engine's render step: a snapshot to its synced objects and hooks, rendered once.

A revision is rendered again only when its key changes: the revision, the CRDs the store
serves (and the source's extra ones), the digest of its post-build inputs (a render that
fetched chart dependencies is never reused). The step reads what rendering needs from the
store (CRDs, namespaces, post-build inputs, the cluster's version for charts), refuses a
revision with problems whole, splits the hooks off the synced objects and keeps the
render, its hooks and its annotation warnings in the engine's memory.
"""

from __future__ import annotations

import time
from dataclasses import replace

import orjson

from gitkrm.charts.release import ChartRenderer
from gitkrm.errors import GitkrmError
from gitkrm.source.snapshot import Snapshot
from gitkrm.sync import keys, live
from gitkrm.sync.engine_parts import EngineParts, ms_since
from gitkrm.sync.hooks import NO_HOOKS, kinds_of
from gitkrm.sync.hooks import split as split_hooks
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.parse import ParseContext
from gitkrm.sync.parsecache import ParseCache
from gitkrm.sync.peernotes import annotation_warnings
from gitkrm.sync.refusal import Refusal
from gitkrm.sync.render import Renderer, RenderResult


def chart_renderer(options: SyncOptions, parse_cache: ParseCache | None) -> ChartRenderer:
    """The source's chart renderer; which releases were installed is kept beside the parse
    cache (in the state dir), so a restart renders upgrades, not installs."""
    return ChartRenderer(
        spec=options.helm,
        default_namespace=options.namespace,
        state_file=None if parse_cache is None else parse_cache.path.with_suffix(".helm.json"),
        persist=parse_cache is not None and not parse_cache.read_only,
        cache_dir=None if parse_cache is None else parse_cache.path.parent.parent / "charts",
    )


class RenderStep:
    """Renders one engine's revisions (see the module docstring)."""

    def __init__(self, parts: EngineParts, *, parse_cache: ParseCache | None) -> None:
        self._parts = parts
        options = parts.options
        self.renderer = Renderer(
            context=ParseContext(
                source=options.source_name,
                default_namespace=options.namespace,
                argo_cd=options.app_source is not None,
                validate=options.app_source is None or options.app_source.validate,
            ),
            disk=parse_cache,
            annotation_limit=not options.server_side,
            charts=chart_renderer(options, parse_cache),
            kube_version=options.kube_version,
            app=options.app_source,
            overlay=options.overlay,
        )

    async def render(self, snapshot: Snapshot) -> tuple[RenderResult, dict[str, float]] | Refusal:
        """The render of `snapshot` and its timings (a remembered one when its key is the
        last one's), or why it can't be applied."""
        parts = self._parts
        store, options, memo = parts.store, parts.options, parts.memo
        start = time.perf_counter()
        crds, memo.started_at = await live.list_at(store, live.CRD)
        if options.extra_crds:
            have = {str(keys.metadata(c).get("name")) for c in crds}
            extra = [orjson.loads(c) for c in options.extra_crds]
            crds = [*crds, *(c for c in extra if str(keys.metadata(c).get("name")) not in have)]
        crd_key = tuple(
            sorted(
                (str(keys.metadata(c).get("name")), str(keys.metadata(c).get("resourceVersion")))
                for c in crds
            )
        )
        postbuild = None
        spec = options.postbuild
        if spec is not None and not spec.empty:
            from gitkrm.sync.postbuild_inputs import resolve  # only sources that use it

            postbuild = await resolve(store, spec)
        key = (snapshot.revision, crd_key, postbuild.digest if postbuild is not None else "")
        remembered = memo.rendered
        if remembered is not None and memo.rendered_key == key and not remembered.remote:
            return remembered, {"git": 0.0, "render": ms_since(start)}
        await self._chart_kube_version(snapshot)
        listed = await live.list_all(store, live.NAMESPACE)
        namespaces = {str(keys.metadata(ns).get("name")) for ns in listed}
        namespaces.update(options.extra_namespaces)  # the peers' (`plan` before `run`)
        rendered = await self.renderer.render(
            snapshot, store_crds=crds, namespaces=namespaces, postbuild=postbuild
        )
        timings = {"git": rendered.read_ms, "render": ms_since(start) - rendered.read_ms}
        if not rendered.ok:
            return Refusal(tuple(str(p) for p in rendered.problems), timings)
        found = split_hooks(rendered.objects)
        hooks = NO_HOOKS
        if found is not None:
            kept, hooks = found
            rendered = replace(
                rendered, objects=tuple(kept), keys=frozenset(d.key for d in kept),
                kinds=kinds_of(kept),
            )  # fmt: skip
        memo.hooks = hooks
        memo.rendered, memo.rendered_key = rendered, key
        memo.registry = rendered.registry
        return rendered, timings

    async def inputs_changed(self) -> bool:
        """Whether the post-build inputs the store holds (`substituteFrom` values, the
        decryption Secret's keys) differ from those of the last render: then the same
        revision needs a full sync, not only a drift check (Flux reads them every time)."""
        parts = self._parts
        spec = parts.options.postbuild
        if spec is None or spec.empty or parts.memo.rendered_key is None:
            return False
        from gitkrm.sync.postbuild_inputs import resolve

        return (await resolve(parts.store, spec)).digest != parts.memo.rendered_key[2]

    def warnings(self, rendered: RenderResult) -> tuple[str, ...]:
        """The revision's warnings (once per render): the render's own (a chart that
        renders differently each time, an object Argo CD's rules render twice), then the
        annotations'."""
        memo = self._parts.memo
        if memo.warnings[0] is not rendered:
            objects = [*rendered.objects, *(d for ds in memo.hooks.by_phase.values() for d in ds)]
            own = tuple(str(w) for w in rendered.warnings)
            memo.warnings = (rendered, own + annotation_warnings(objects))
        return memo.warnings[1]

    async def _chart_kube_version(self, snapshot: Snapshot) -> None:
        """A cluster's own Kubernetes version for `.Capabilities` of Helm charts, asked
        once, and only when a revision has a chart (the embedded target's is 1.33)."""
        renderer = self.renderer
        if renderer.kube_version is not None or self._parts.options.kube_version is not None:
            return
        server_version = getattr(self._parts.store, "server_version", None)
        if server_version is None or not any(p.endswith("Chart.yaml") for p in snapshot.files):
            return
        try:
            renderer.kube_version = str(await server_version()) or None
        except GitkrmError:
            return  # the default stands; the next render asks again
