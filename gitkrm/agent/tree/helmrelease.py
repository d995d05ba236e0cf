"""Flux's HelmRelease (`helm.toolkit.fluxcd.io/v2`, and v2beta2) under `--interpret flux`:
each HelmRelease declares a child source whose content is one Helm release of its chart
(`gitkrm.charts.source` for a HelmRepository or OCIRepository chart, a chart directory of
a Git repository otherwise), rendered by Helm and synced like any source (inventory,
prune, drift, health; Helm hooks as gitkrm maps them, docs/charts.md).

The fields and how each is honoured are the table of docs/helmreleases.md; every field
gitkrm does not honour is an `Unhonoured` with its reason (the status's `NotHonoured`
condition and the log), never dropped silently.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import orjson

from gitkrm.charts.spec import CrdPolicy, HelmSpec
from gitkrm.errors import BadRequest, ManifestError
from gitkrm.krm import GroupKind, Obj, ObjectRef
from gitkrm.sync.options import IgnoreDifference
from gitkrm.sync.overlay_spec import Overlay

from ..config import DEFAULT_INTERVAL, SourceConfig
from .fields import REMOTE_CLUSTER, Fail, unhonoured_fields
from .flux import overlay_of
from .flux_repo import duration
from .flux_spec import KustomizationSpec
from .helmrelease_chart import chart_origin
from .helmrelease_crds import crds
from .helmrelease_status import release_status
from .helmrelease_values import release_values
from .model import ChildSpec, ChildState, Context, Peer, SourceStatus, Unhonoured
from .naming import child_name, describe

GROUP: Final = "helm.toolkit.fluxcd.io"
HELM_RELEASE: Final = GroupKind(group=GROUP, kind="HelmRelease")
FINALIZER: Final = "finalizers.fluxcd.io"
MAX_RELEASE_NAME: Final = 53

_NO_RELEASE_STORAGE: Final = "gitkrm keeps no Helm release storage (its inventory owns the objects)"
_UNHONOURED: Final = {
    "storageNamespace": _NO_RELEASE_STORAGE + ": there is no release Secret to place",
    "test": _NO_RELEASE_STORAGE + ": Helm tests are not run (test hooks are left out)",
    "rollback": _NO_RELEASE_STORAGE + ": `git revert` is the rollback",
    "uninstall": _NO_RELEASE_STORAGE + ": deleting the HelmRelease prunes its objects",
    "maxHistory": _NO_RELEASE_STORAGE + ": status.history keeps the last 5 releases",
    "serviceAccountName": "gitkrm applies with its own identity",
    "persistentClient": "no Helm client is kept",
}
_HONOURED: Final = frozenset(
    {
        "chart", "chartRef", "interval", "timeout", "values", "valuesFrom", "targetNamespace",
        "releaseName", "install", "upgrade", "dependsOn", "suspend", "postRenderers",
        "driftDetection", "commonMetadata",
    }
)  # fmt: skip
_ACTION_HONOURED: Final = frozenset({"crds", "createNamespace", "skipCRDs", "disableWait"})
_ACTION_REASON: Final = "Helm's actions are not run: gitkrm applies the rendered objects"


class HelmReleaseInterpreter:
    """The `Interpreter` of Flux HelmReleases (see the module docstring)."""

    peer: Peer | None = Peer.FLUX
    kinds: frozenset[GroupKind] = frozenset({HELM_RELEASE})

    async def child(self, obj: Obj, ctx: Context) -> ChildSpec:
        ref = dataclasses.replace(ObjectRef.of(obj), version=None)
        parent = ctx.parent
        namespace = ref.namespace or "default"

        def fail(field: str, message: str) -> ManifestError:
            return ManifestError(
                f"{field}: {message}", path=f"source {parent.name}", object=describe(ref)
            )

        spec: Mapping[str, Any] = obj.get("spec") or {}
        if spec.get("kubeConfig"):
            raise fail("spec.kubeConfig", REMOTE_CLUSTER)
        unhonoured = unhonoured_fields(spec, at="spec", known=_HONOURED, reasons=_UNHONOURED)
        for action in ("install", "upgrade"):
            for k in spec.get(action) or {}:
                if k not in _ACTION_HONOURED:
                    unhonoured.append(Unhonoured(f"spec.{action}.{k}", _ACTION_REASON))
        origin = await chart_origin(
            spec, namespace=namespace, parent=parent, get=ctx.get, fail=fail
        )
        unhonoured.extend(origin.unhonoured)
        values = await release_values(spec, namespace=namespace, get=ctx.get, fail=fail)
        target = str(spec.get("targetNamespace") or namespace)
        overlay, more = post_renderers(spec, fail=fail)
        unhonoured.extend(more)
        ignores, more = drift_detection(spec.get("driftDetection") or {}, fail=fail)
        unhonoured.extend(more)
        install = spec.get("install") or {}
        upgrade = spec.get("upgrade") or {}
        helm = HelmSpec(
            release_name=release_name(ref.name, spec),
            namespace=target,
            values_json=orjson.dumps(values, option=orjson.OPT_SORT_KEYS),
            install_crds=_crd_policy(install, CrdPolicy.CREATE, "spec.install", fail),
            upgrade_crds=_crd_policy(upgrade, CrdPolicy.SKIP, "spec.upgrade", fail),
            create_namespace=bool(install.get("createNamespace")),
            repositories=origin.repositories,
        )
        intervals = [
            v for v in (duration(spec.get("interval"), "spec.interval", fail), origin.interval) if v
        ]
        timeout = duration(spec.get("timeout"), "spec.timeout", fail)
        config = SourceConfig(
            name=child_name(ref),
            url=origin.url,
            ref=origin.ref,
            path=origin.path,
            interval=min(intervals) if intervals else DEFAULT_INTERVAL,
            default_namespace=target,
            suspend=bool(spec.get("suspend")) or origin.suspend,
            auth=origin.auth,
            ca_file=origin.ca_file,
            ignore_differences=ignores,
            helm=helm,
            chart=origin.chart,
            overlay=overlay,
        )
        if timeout is not None:
            config = dataclasses.replace(config, health_timeout=timeout)
        depends = tuple(
            ObjectRef(
                group=GROUP,
                kind=HELM_RELEASE.kind,
                name=str(d.get("name")),
                namespace=str(d.get("namespace") or namespace),
            )
            for d in spec.get("dependsOn") or ()
            if isinstance(d, Mapping) and d.get("name")
        )
        wait = not (install.get("disableWait") or upgrade.get("disableWait"))
        return ChildSpec(
            declared_by=ref,
            config=config,
            depends_on=depends,
            wait=wait,
            finalizer=FINALIZER,
            unhonoured=tuple(unhonoured),
        )

    def status(self, obj: Obj, state: ChildState) -> Obj:
        spec: Mapping[str, Any] = obj.get("spec") or {}
        md = obj.get("metadata") or {}
        namespace = str(md.get("namespace") or "default")
        chart = str(((spec.get("chart") or {}).get("spec") or {}).get("chart") or "")
        if state.spec is not None and state.spec.config.chart is not None:
            chart = state.spec.config.chart.name
        chart = chart.rstrip("/").rpartition("/")[2] or str(
            (spec.get("chartRef") or {}).get("name") or ""
        )
        return release_status(
            obj.get("status") or {},
            state,
            obj=obj,
            chart=chart,
            release=release_name(str(md.get("name") or ""), spec),
            namespace=str(spec.get("targetNamespace") or namespace),
        )

    def source_statuses(self, obj: Obj, state: ChildState) -> Sequence[SourceStatus]:
        from .flux_sources import helmrelease_sources

        return helmrelease_sources(obj, state)

    def crds(self) -> Sequence[Obj]:
        return crds()


def release_name(name: str, spec: Mapping[str, Any]) -> str:
    """Flux's: `releaseName`, else `[<targetNamespace>-]<name>`, shortened past 53
    characters to 40 and a 12-character hash of the whole."""
    given = str(spec.get("releaseName") or "")
    if given:
        return given
    target = str(spec.get("targetNamespace") or "")
    full = f"{target}-{name}" if target else name
    if len(full) <= MAX_RELEASE_NAME:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:12]
    return f"{full[: MAX_RELEASE_NAME - 13]}-{digest}"


def _crd_policy(action: Mapping[str, Any], default: CrdPolicy, at: str, fail: Fail) -> CrdPolicy:
    if action.get("skipCRDs"):
        return CrdPolicy.SKIP
    value = action.get("crds")
    if value is None:
        return default
    try:
        return CrdPolicy(str(value))
    except ValueError:
        raise fail(f"{at}.crds", f"{value!r}: give Create, CreateReplace or Skip") from None


def post_renderers(
    spec: Mapping[str, Any], *, fail: Fail
) -> tuple[Overlay | None, list[Unhonoured]]:
    """`spec.postRenderers[].kustomize` (patches, patchesStrategicMerge, patchesJson6902,
    images) and `spec.commonMetadata`, read as the Flux interpreter reads a
    Kustomization's, as one kustomize `Overlay` over the rendered objects."""
    unhonoured: list[Unhonoured] = []
    overlays: list[Overlay] = []
    keys = ("patches", "patchesStrategicMerge", "patchesJson6902", "images")
    for i, item in enumerate(spec.get("postRenderers") or ()):
        at = f"spec.postRenderers[{i}].kustomize"
        k = item.get("kustomize") if isinstance(item, Mapping) else None
        if not isinstance(k, Mapping):
            raise fail(f"spec.postRenderers[{i}]", "only kustomize post-renderers exist")
        unhonoured.extend(
            Unhonoured(f"{at}.{key}", "not a post-renderer field gitkrm knows")
            for key in k
            if key not in keys
        )
        read = overlay_of(
            cast(KustomizationSpec, {key: k[key] for key in keys if key in k}),
            cast(Any, _Prefixed(fail, at)),
        )
        if read is not None:
            overlays.append(read)
    if spec.get("commonMetadata"):
        read = overlay_of(
            cast(KustomizationSpec, {"commonMetadata": spec["commonMetadata"]}), cast(Any, fail)
        )
        if read is not None:
            overlays.append(read)
    out = Overlay(
        patches=tuple(p for o in overlays for p in o.patches),
        images=tuple(im for o in overlays for im in o.images),
        labels=tuple(kv for o in overlays for kv in o.labels),
        annotations=tuple(kv for o in overlays for kv in o.annotations),
    )
    return (None if out.empty else out), unhonoured


class _Prefixed:
    """Errors of a post-renderer's fields named in full (`spec.postRenderers[0]...`)."""

    def __init__(self, fail: Fail, at: str) -> None:
        self.fail, self.at = fail, at

    def __call__(self, field: str, message: str) -> Exception:
        return self.fail(self.at + field.removeprefix("spec"), message)


def drift_detection(
    spec: Mapping[str, Any], *, fail: Fail
) -> tuple[tuple[IgnoreDifference, ...], list[Unhonoured]]:
    """`spec.driftDetection`: the ignore rules as gitkrm ignore differences (per kind:
    a rule needs `target.kind`); a mode other than `enabled` is reported: gitkrm corrects
    drift of what it applies at every sync, which is Flux's `enabled`."""
    unhonoured: list[Unhonoured] = []
    mode = spec.get("mode")
    if mode not in (None, "enabled"):
        unhonoured.append(
            Unhonoured(
                "spec.driftDetection.mode",
                f"{mode}: gitkrm corrects drift of the objects it applies at every sync "
                "(as mode: enabled); use ignore rules for fields others own",
            )
        )
    out: list[IgnoreDifference] = []
    for i, rule in enumerate(spec.get("ignore") or ()):
        at = f"spec.driftDetection.ignore[{i}]"
        if not isinstance(rule, Mapping) or not rule.get("paths"):
            raise fail(at, "needs paths")
        target = rule.get("target") or {}
        if not target.get("kind"):
            unhonoured.append(
                Unhonoured(at, "a rule without target.kind (every kind) is not supported")
            )
            continue
        try:
            out.append(
                IgnoreDifference(
                    group=str(target.get("group") or ""),
                    kind=str(target["kind"]),
                    json_pointers=tuple(str(p) for p in rule["paths"]),
                    name=target.get("name") or None,
                    namespace=target.get("namespace") or None,
                )
            )
        except BadRequest as e:
            raise fail(f"{at}.paths", e.message) from None
    return tuple(out), unhonoured


INTERPRETER: Final = HelmReleaseInterpreter()
