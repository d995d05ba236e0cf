"""Argo CD's `Application` read as a child source (`--interpret argocd`).

Every field of `spec` is mapped or reported as not honoured (`Unhonoured`: on the
object's status as a warning condition, and in the log), never dropped: docs/argocd.md
has the table. The source (`spec.source`, or `spec.sources` with one source) is a Git
directory or kustomize source (`argocd_repo` says which repository and ref); Helm sources
go to `argocd_helm` (issue #21). Argo CD's path rules and the application-wide sync
options become the child's `AppSource` (`gitkrm.sync.appsource`), `spec.source.kustomize`
its `Overlay`. Without `syncPolicy.automated` the child is compared, never applied.
Deleting an Application prunes its objects only when it carries Argo CD's
`resources-finalizer.argocd.argoproj.io` (Argo CD's cascade rule). Errors name the
object and the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from gitkrm.charts.spec import HelmSpec
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.krm.names import is_dns1123_label
from gitkrm.sync.appsource_spec import (
    AppSource,
    BuildEnv,
    DirectorySpec,
    ManagedNamespace,
    SourceType,
)
from gitkrm.sync.options import IgnoreDifference
from gitkrm.sync.overlay_spec import ImageOverride, Overlay, OverlayPatch

from .argocd_jsonnet import jsonnet_of
from .argocd_spec import (
    APPLICATION,
    FINALIZERS,
    GROUP,
    IN_CLUSTER_NAME,
    IN_CLUSTER_SERVER,
    VERSION,
    Application,
    ApplicationSpec,
    Kustomize,
    SyncPolicy,
)
from .fields import (
    Fail,
    FieldErrors,
    as_list,
    components,
    objects,
    source_path,
    str_map,
    unhonoured_fields,
)
from .model import ChildSpec, ChildState, Context, Peer, SourceStatus, Unhonoured

_MAPPED: Final = frozenset(
    {"project", "source", "sources", "destination", "syncPolicy", "ignoreDifferences",
     "info", "revisionHistoryLimit"}
)  # fmt: skip
_SOURCE_FIELDS: Final = frozenset(
    {"repoURL", "targetRevision", "path", "directory", "kustomize", "chart", "helm", "plugin",
     "ref", "name"}
)  # fmt: skip
_KUSTOMIZE_UNHONOURED: Final = {
    "version": "gitkrm builds with the kustomize (or kubectl) on its PATH",
    "forceCommonLabels": "labels never replace a label a manifest sets",
    "forceCommonAnnotations": "annotations never replace an annotation a manifest sets",
    "commonAnnotationsEnvsubst": "annotations are set as written",
    "labelIncludeTemplates": "labels are set on metadata only",
    "kubeVersion": "kustomize builds without a Kubernetes version",
    "apiVersions": "kustomize builds without API versions",
    "ignoreMissingComponents": "a missing component is an error",
}
# Application-wide syncOptions: honoured as the annotation table says, or why not.
_OPTIONS_HONOURED: Final = frozenset(
    {"createnamespace", "serversideapply", "prune", "force", "prunelast", "applyoutofsynconly",
     "respectignoredifferences", "failonsharedresource", "validate"}
)  # fmt: skip
_OPTIONS_UNHONOURED: Final = {
    "replace": "gitkrm patches (or, with Force=true, deletes and re-creates on an immutable "
    "change) instead of replacing",
    "skipdryrunonmissingresource": "honoured per object (the sync-options annotation), not "
    "application-wide",
    "prunepropagationpolicy": "gitkrm prunes with background propagation",
}
_OPTION_DEFAULTS: Final = {
    "replace": "false",
    "skipdryrunonmissingresource": "false",
    "prunepropagationpolicy": "background",  # what gitkrm does (Argo CD: foreground)
}
_UNHONOURED: Final = {
    "revisionHistoryLimit": "gitkrm keeps the sync history in Git notes, not status.history",
}


def image(text: str, fail: Fail, *, at: str) -> ImageOverride:
    """Argo CD's image override: `[old=]name[:tag][@digest]`."""
    old, _, new = text.rpartition("=") if "=" in text else ("", "", text)
    digest = None
    if "@" in new:
        new, _, digest = new.partition("@")
    tag = None
    slash = new.rfind("/")
    colon = new.rfind(":")
    if colon > slash:
        new, tag = new[:colon], new[colon + 1 :]
    if not new:
        raise fail(at, f"{text!r}: expected [old-name=]name[:tag][@digest]")
    if old:
        return ImageOverride(name=old, new_name=new, new_tag=tag, digest=digest)
    return ImageOverride(name=new, new_tag=tag, digest=digest)


def overlay_of(k: Kustomize, fail: Fail, *, at: str) -> tuple[Overlay | None, list[Unhonoured]]:
    """`kustomize` as the child's Overlay, and what of it is not honoured."""
    known = {"namePrefix", "nameSuffix", "images", "patches", "namespace", "commonLabels",
             "commonAnnotations", "commonAnnotationsEnvsubst", "components",
             "labelWithoutSelector", "replicas"}  # fmt: skip
    unhonoured = unhonoured_fields(k, at=at, known=known, reasons=_KUSTOMIZE_UNHONOURED)
    patches: list[OverlayPatch] = []
    for here, p in objects(k.get("patches"), f"{at}.patches", fail, fields="patch, target"):
        path, text = p.get("path"), p.get("patch")
        if path and text:
            raise fail(here, "give `patch` or `path`, not both")
        if path and not isinstance(path, str):
            raise fail(f"{here}.path", "must be a path relative to the source path")
        if not path and (not isinstance(text, str) or not text.strip()):
            raise fail(f"{here}.patch", "required: a strategic merge or JSON 6902 patch (or path)")
        target = p.get("target") or {}
        if not isinstance(target, Mapping):
            raise fail(f"{here}.target", "must be a selector")
        if p.get("options"):
            unhonoured.append(Unhonoured(f"{here}.options", "not applied"))
        selector = tuple(sorted((str(a), b) for a, b in target.items()))
        patches.append(OverlayPatch(str(text or ""), selector, path=str(path) if path else None))
    images = [
        image(str(im), fail, at=f"{at}.images[{i}]")
        for i, im in enumerate(as_list(k.get("images"), f"{at}.images", fail))
    ]
    paths = components(k.get("components"), f"{at}.components", fail, relative_to="the source path")
    labels = str_map(k.get("commonLabels"), f"{at}.commonLabels", fail)
    if labels and not k.get("labelWithoutSelector"):
        unhonoured.append(
            Unhonoured(
                f"{at}.commonLabels",
                "set on every object's labels only, not on selectors and templates (as "
                "labelWithoutSelector: true)",
            )
        )
    out = Overlay(
        replicas=_replicas(k.get("replicas"), f"{at}.replicas", fail),
        namespace=k.get("namespace") or None,
        name_prefix=k.get("namePrefix") or "",
        name_suffix=k.get("nameSuffix") or "",
        patches=tuple(patches),
        images=tuple(images),
        components=paths,
        labels=labels,
        annotations=str_map(k.get("commonAnnotations"), f"{at}.commonAnnotations", fail),
    )
    return (None if out.empty else out), unhonoured


def _sync_options(policy: SyncPolicy, fail: Fail) -> tuple[dict[str, bool], list[Unhonoured]]:
    """`syncOptions` (`Name=value`): the honoured ones by lower-case name, the rest."""
    out: dict[str, bool] = {}
    unhonoured: list[Unhonoured] = []
    for i, raw in enumerate(
        as_list(policy.get("syncOptions"), "spec.syncPolicy.syncOptions", fail)
    ):
        at = f"spec.syncPolicy.syncOptions[{i}]"
        name, eq, value = str(raw).partition("=")
        key = name.strip().lower()
        if not eq:
            raise fail(at, f"{raw!r}: expected Name=value")
        if key in _OPTIONS_HONOURED:
            out[key] = value.strip().lower() == "true"
        elif key in _OPTIONS_UNHONOURED:
            if value.strip().lower() != _OPTION_DEFAULTS.get(key):  # asks for a change
                unhonoured.append(Unhonoured(f"{at} ({raw})", _OPTIONS_UNHONOURED[key]))
        else:
            unhonoured.append(Unhonoured(f"{at} ({raw})", "not an option gitkrm knows"))
    return out, unhonoured


def _replicas(value: object, at: str, fail: Fail) -> tuple[tuple[str, int], ...]:
    """`kustomize.replicas`: `name` and `count` (an integer, or one written as a string)."""
    out = []
    for here, r in objects(value, at, fail, fields="name, count"):
        name, count = r.get("name"), r.get("count")
        if not isinstance(name, str) or not name:
            raise fail(f"{here}.name", "required: the workload's name")
        if isinstance(count, str) and count.strip().isdigit():
            count = int(count)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise fail(f"{here}.count", f"{count!r} is not a number of replicas")
        out.append((name, count))
    return tuple(out)


def _ignores(
    spec: ApplicationSpec, fail: Fail
) -> tuple[tuple[IgnoreDifference, ...], list[Unhonoured]]:
    out: list[IgnoreDifference] = []
    unhonoured: list[Unhonoured] = []
    items = as_list(spec.get("ignoreDifferences"), "spec.ignoreDifferences", fail)
    for i, item in enumerate(items):
        at = f"spec.ignoreDifferences[{i}]"
        if not isinstance(item, Mapping) or not item.get("kind"):
            raise fail(f"{at}.kind", "required")
        for key in ("jqPathExpressions", "managedFieldsManagers"):
            if item.get(key):
                unhonoured.append(Unhonoured(f"{at}.{key}", "only jsonPointers are honoured"))
        pointers = [str(p) for p in as_list(item.get("jsonPointers"), f"{at}.jsonPointers", fail)]
        for p in pointers:
            if not p.startswith("/"):
                raise fail(f"{at}.jsonPointers", f"{p!r} is not a JSON pointer (it starts with /)")
        if pointers:
            out.append(
                IgnoreDifference(
                    group=str(item.get("group") or ""),
                    kind=str(item["kind"]),
                    json_pointers=tuple(pointers),
                    name=item.get("name") or None,
                    namespace=item.get("namespace") or None,
                )
            )
    return tuple(out), unhonoured


def _destination(spec: ApplicationSpec, fail: Fail) -> str | None:
    """The destination namespace; another cluster is an error."""
    dest = spec.get("destination")
    if not isinstance(dest, Mapping):
        raise fail("spec.destination", "required (server or name, and namespace)")
    server, name = dest.get("server"), dest.get("name")
    if server and name:
        raise fail("spec.destination", "give server or name, not both")
    if server and str(server).rstrip("/") != IN_CLUSTER_SERVER:
        raise fail(
            "spec.destination.server",
            f"{server!r}: gitkrm syncs its own target only ({IN_CLUSTER_SERVER})",
        )
    if name and name != IN_CLUSTER_NAME:
        raise fail(
            "spec.destination.name", f"{name!r}: gitkrm syncs its own target only (in-cluster)"
        )
    if not server and not name:
        raise fail("spec.destination", "server or name is required")
    namespace = dest.get("namespace") or None
    if namespace is not None and (errs := is_dns1123_label(str(namespace))):
        raise fail("spec.destination.namespace", f"{namespace!r}: {'; '.join(errs)}")
    return namespace


async def read(obj: Obj, ctx: Context) -> ChildSpec:
    """The child source an Application declares."""
    parent = ctx.parent
    fail = FieldErrors(obj, parent)
    app = cast(Application, obj)
    gvk = GVK.of(obj)
    if gvk.group != GROUP or gvk.kind != APPLICATION.kind:
        raise fail("kind", f"{obj.get('apiVersion')} {obj.get('kind')} is not an Application")
    if gvk.version != VERSION:
        raise fail("apiVersion", f"{obj.get('apiVersion')}: gitkrm reads {GROUP}/{VERSION}")
    md = app.get("metadata") or {}
    name, namespace = md.get("name") or "", md.get("namespace") or "argocd"
    spec: ApplicationSpec = app.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise fail("spec", "must be an object")
    unhonoured = unhonoured_fields(spec, at="spec", known=_MAPPED, reasons=_UNHONOURED)
    target_ns = _destination(spec, fail)
    from .argocd_project import project_check

    project = await project_check(spec, app=name, namespace=namespace, ctx=ctx, fail=fail)
    unhonoured.extend(project.unhonoured)
    from .argocd_helm import sources

    source, at, refs = sources(spec, fail)
    unhonoured.extend(unhonoured_fields(source, at=at, known=_SOURCE_FIELDS))
    if source.get("plugin"):
        raise fail(f"{at}.plugin", "config management plugins are not supported")
    if source.get("ref"):
        unhonoured.append(Unhonoured(f"{at}.ref", "a values reference serves Helm sources"))
    repo_url = source.get("repoURL")
    if not repo_url or not isinstance(repo_url, str):
        raise fail(f"{at}.repoURL", "required")
    extra: Mapping[str, Any] = {}
    if source.get("chart") or source.get("helm") or refs:
        from .argocd_helm import helm_source

        extra = await helm_source(
            obj, source, at=at, fail=fail, ctx=ctx, namespace=namespace, target_ns=target_ns,
            refs=refs, unhonoured=unhonoured,
        )  # fmt: skip
    from .argocd_repo import repository
    from .flux_repo import Repository

    if source.get("chart"):  # a chart repository, not Git: `extra` says where
        repo = Repository(url=repo_url, ref=None)
    else:
        repo = await repository(
            repo_url, str(source.get("targetRevision") or ""), namespace=namespace, ctx=ctx,
            fail=fail, at=at,
        )  # fmt: skip
    unhonoured.extend(repo.unhonoured)
    path = source_path(source.get("path"), fail, at=f"{at}.path")
    directory, kustomize = source.get("directory"), source.get("kustomize")
    if directory is not None and kustomize is not None:
        raise fail(at, "multiple source types: give directory or kustomize, not both")
    source_type = SourceType.AUTO
    dir_spec = DirectorySpec()
    if directory is not None:
        if not isinstance(directory, Mapping):
            raise fail(f"{at}.directory", "must be an object (recurse, include, exclude)")
        source_type = SourceType.DIRECTORY
        unhonoured.extend(
            unhonoured_fields(
                directory, at=f"{at}.directory", known=("recurse", "include", "exclude", "jsonnet")
            )
        )
        dir_spec = DirectorySpec(
            recurse=bool(directory.get("recurse")),
            include=str(directory.get("include") or ""),
            exclude=str(directory.get("exclude") or ""),
            jsonnet=jsonnet_of(directory.get("jsonnet"), fail, at=f"{at}.directory.jsonnet"),
        )
    overlay = None
    if kustomize is not None:
        if not isinstance(kustomize, Mapping):
            raise fail(f"{at}.kustomize", "must be an object")
        source_type = SourceType.KUSTOMIZE
        overlay, k_unhonoured = overlay_of(kustomize, fail, at=f"{at}.kustomize")
        unhonoured.extend(k_unhonoured)
    policy: SyncPolicy = spec.get("syncPolicy") or {}
    if not isinstance(policy, Mapping):
        raise fail("spec.syncPolicy", "must be an object")
    unhonoured += unhonoured_fields(
        policy,
        at="spec.syncPolicy",
        known=("automated", "syncOptions", "managedNamespaceMetadata"),
        reasons={"retry": "a failed sync is retried at the interval"},
    )
    automated_spec = policy.get("automated")
    automated = automated_spec is not None and automated_spec.get("enabled", True) is not False
    auto = automated_spec or {}
    options, o_unhonoured = _sync_options(policy, fail)
    unhonoured.extend(o_unhonoured)
    create_ns = None
    if options.get("createnamespace") and target_ns:  # none: nothing to make, as Argo CD
        nsmeta = policy.get("managedNamespaceMetadata") or {}
        create_ns = ManagedNamespace(
            target_ns,
            labels=str_map(nsmeta.get("labels"), "spec.syncPolicy.managedNamespaceMetadata.labels",
                            fail),
            annotations=str_map(nsmeta.get("annotations"),
                                 "spec.syncPolicy.managedNamespaceMetadata.annotations", fail),
        )  # fmt: skip
    elif policy.get("managedNamespaceMetadata"):
        unhonoured.append(
            Unhonoured(
                "spec.syncPolicy.managedNamespaceMetadata", "used with CreateNamespace=true only"
            )
        )
    app_source = AppSource(
        source_type=source_type,
        directory=dir_spec,
        server_side=options.get("serversideapply", False),
        # Without automated prune Argo CD never deletes an object gone from Git.
        prune=bool(auto.get("prune")) and options.get("prune", True),
        force=options.get("force", False),
        validate=options.get("validate", True),
        create_namespace=create_ns,
        project=project.policy,
        build_env=BuildEnv(
            app_name=name,
            namespace=target_ns or "",
            project=str(spec.get("project") or "default"),
            repo_url=repo_url,
            source_path=str(source.get("path") or ""),
            target_revision=str(source.get("targetRevision") or ""),
            annotations=bool((kustomize or {}).get("commonAnnotationsEnvsubst")),
        ),
    )
    ignores, i_unhonoured = _ignores(spec, fail)
    unhonoured.extend(i_unhonoured)
    declared_by = ObjectRef(
        group=GROUP, kind=APPLICATION.kind, name=name, namespace=namespace, version=VERSION
    )
    finalizer = next((f for f in md.get("finalizers") or () if f in FINALIZERS), None)
    config = dataclasses.replace(
        # an app of apps: its path declares more Applications, interpreted as the parent's
        repo.child_config(declared_by=declared_by, path=path, parent=parent),
        interval=parent.interval,
        timeout=parent.timeout,
        health_timeout=parent.health_timeout,
        default_namespace=target_ns,
        prune=True,  # gone from Git: AppSource.prune; the Application deleted: its finalizer
        allow_empty=bool(auto.get("allowEmpty")),
        ignore_differences=ignores,
        helm=HelmSpec(release_name=name, namespace=target_ns),
        overlay=overlay,
        app_source=app_source,
        automated=automated,
        self_heal=bool(auto.get("selfHeal")),
        sync_windows=project.windows,
    )
    if extra:
        config = dataclasses.replace(config, **extra)
    from .argocd_appset_rolling import after

    return ChildSpec(
        declared_by=declared_by,
        config=config,
        depends_on=tuple(
            ObjectRef(
                group=GROUP, kind=APPLICATION.kind, name=n, namespace=namespace, version=VERSION
            )
            for n in after(md.get("annotations") or {})
        ),  # an ApplicationSet's RollingSync step (argocd_appset_rolling)
        wait=True,  # Argo CD: Synced and Healthy
        finalizer=finalizer,
        unhonoured=tuple(unhonoured),
        same_as_parent=repo.is_parent and source_path(parent.path, fail, at="path") == path,
        refused=project.refused,
        reads=project.reads,
    )


class ArgoCDInterpreter:
    """Argo CD's Application (the tree's registry uses `INTERPRETER`)."""

    peer: Peer | None = Peer.ARGOCD
    kinds = frozenset({APPLICATION})

    async def child(self, obj: Obj, ctx: Context) -> ChildSpec:
        return await read(obj, ctx)

    def status(self, obj: Obj, state: ChildState) -> Obj:
        from .argocd_status import application_status

        return application_status(obj, state)

    def source_statuses(self, obj: Obj, state: ChildState) -> Sequence[SourceStatus]:
        return ()  # Argo CD keeps no source objects: the Application carries it all

    def crds(self) -> Sequence[Obj]:
        from .argocd_crds import crds

        return crds()


INTERPRETER: Final = ArgoCDInterpreter()

__all__ = ["INTERPRETER", "ArgoCDInterpreter", "image", "overlay_of", "read"]
