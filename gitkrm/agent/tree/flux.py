"""Flux's `Kustomization` read as a child source (`--interpret flux`).

Every field of `spec` is mapped, or reported as not honoured (`Unhonoured`, shown on the
object's status and in the log), never dropped: see docs/flux.md for the table. The
`sourceRef` GitRepository is read through the context (`flux_repo`): one naming the
repository being synced is that repository, and a Kustomization over it and the parent's
own path (Flux bootstrap's `flux-system`) is the parent itself (`same_as_parent`). The
transforms (`targetNamespace`, `namePrefix`/`nameSuffix`, `patches`, `images`,
`components`, `commonMetadata`) become the child's `Overlay`, `postBuild` and
`decryption` its `PostBuildSpec`. Errors name the object and the field.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from gitkrm.errors import BadRequest, ManifestError
from gitkrm.health.expressions import HealthChecks
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.source import GitRef
from gitkrm.sync.overlay_spec import ImageOverride, Overlay, OverlayPatch
from gitkrm.sync.postbuild_spec import DecryptionSpec, PostBuildSpec, RefKind, SubstituteRef

from ..config import SourceConfig
from ..crd import GROUP as GITSOURCE_GROUP
from ..crd import KIND as GITSOURCE_KIND
from ..crd import NAMESPACE as GITSOURCE_NAMESPACE
from .fields import (
    REMOTE_CLUSTER,
    Fail,
    FieldErrors,
    as_list,
    components,
    source_path,
    str_map,
    unhonoured_fields,
)
from .flux_repo import Repository, duration, read_repository
from .flux_spec import (
    EXTERNAL_ARTIFACT,
    FINALIZER,
    GIT_REPOSITORY,
    KUSTOMIZATION,
    KUSTOMIZATION_VERSIONS,
    KUSTOMIZE_GROUP,
    OCI_REPOSITORY,
    Kustomization,
    KustomizationSpec,
)
from .model import ChildSpec, ChildState, Context, Peer, SourceStatus, Unhonoured
from .naming import child_name

_UNHONOURED: Final = {
    "serviceAccountName": "not honoured until RBAC lands: gitkrm applies with its own credentials",
    "force": "gitkrm re-creates an object on an immutable-field change only when the object "
    "says kustomize.toolkit.fluxcd.io/force: enabled (or gitkrm.io/force: enabled)",
    "validation": "removed in Flux v1; gitkrm always validates against the schemas",
}
_MAPPED: Final = frozenset(
    {
        "path", "sourceRef", "interval", "timeout", "prune", "suspend", "wait",
        "targetNamespace", "namePrefix", "nameSuffix", "dependsOn", "postBuild", "decryption",
        "patches", "patchesStrategicMerge", "patchesJson6902", "images", "components",
        "commonMetadata", "healthChecks", "healthCheckExprs", "deletionPolicy", "retryInterval",
    }
)  # fmt: skip


def _target(value: object, field: str, fail: Fail) -> tuple[tuple[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise fail(field, "must be a selector (group, version, kind, name, namespace, ...)")
    return tuple(sorted((str(k), v) for k, v in value.items()))


def overlay_of(spec: KustomizationSpec, fail: Fail) -> Overlay | None:
    """The kustomize transforms the Kustomization asks for (None: none)."""
    patches: list[OverlayPatch] = []
    for i, p in enumerate(as_list(spec.get("patches"), "spec.patches", fail)):
        if not isinstance(p, Mapping) or not isinstance(p.get("patch"), str) or not p["patch"]:
            raise fail(f"spec.patches[{i}].patch", "required: a strategic merge or JSON 6902 patch")
        patches.append(
            OverlayPatch(p["patch"], _target(p.get("target"), f"spec.patches[{i}].target", fail))
        )
    for i, p in enumerate(
        as_list(spec.get("patchesStrategicMerge"), "spec.patchesStrategicMerge", fail)
    ):
        if not isinstance(p, Mapping):
            raise fail(f"spec.patchesStrategicMerge[{i}]", "must be an object")
        patches.append(OverlayPatch(json.dumps(p)))
    for i, p in enumerate(as_list(spec.get("patchesJson6902"), "spec.patchesJson6902", fail)):
        at = f"spec.patchesJson6902[{i}]"
        if not isinstance(p, Mapping) or not isinstance(p.get("patch"), list):
            raise fail(f"{at}.patch", "required: a list of JSON 6902 operations")
        if not p.get("target"):
            raise fail(f"{at}.target", "required")
        patches.append(
            OverlayPatch(json.dumps(p["patch"]), _target(p["target"], f"{at}.target", fail))
        )
    images: list[ImageOverride] = []
    for i, im in enumerate(as_list(spec.get("images"), "spec.images", fail)):
        if not isinstance(im, Mapping) or not im.get("name"):
            raise fail(f"spec.images[{i}].name", "required")
        images.append(
            ImageOverride(
                name=str(im["name"]),
                new_name=im.get("newName") or None,
                new_tag=None if im.get("newTag") is None else str(im["newTag"]),
                digest=im.get("digest") or None,
            )
        )
    paths = components(spec.get("components"), "spec.components", fail, relative_to="spec.path")
    md = spec.get("commonMetadata") or {}
    if not isinstance(md, Mapping):
        raise fail("spec.commonMetadata", "must be an object (labels, annotations)")
    for key in md:
        if key not in ("labels", "annotations"):
            raise fail(f"spec.commonMetadata.{key}", "unknown field (labels, annotations)")
    out = Overlay(
        namespace=spec.get("targetNamespace") or None,
        name_prefix=spec.get("namePrefix") or "",
        name_suffix=spec.get("nameSuffix") or "",
        patches=tuple(patches),
        images=tuple(images),
        components=paths,
        labels=str_map(md.get("labels"), "spec.commonMetadata.labels", fail),
        annotations=str_map(md.get("annotations"), "spec.commonMetadata.annotations", fail),
    )
    return None if out.empty else out


def postbuild_of(
    spec: KustomizationSpec, namespace: str, parent: SourceConfig, fail: Fail
) -> tuple[PostBuildSpec | None, tuple[Unhonoured, ...]]:
    """`postBuild` (variables from the object's namespace) and `decryption`."""
    pb = spec.get("postBuild") or {}
    unhonoured = tuple(
        unhonoured_fields(pb, at="spec.postBuild", known=("substitute", "substituteFrom"))
    )
    refs: list[SubstituteRef] = []
    for i, r in enumerate(as_list(pb.get("substituteFrom"), "spec.postBuild.substituteFrom", fail)):
        at = f"spec.postBuild.substituteFrom[{i}]"
        if not isinstance(r, Mapping) or r.get("kind") not in ("ConfigMap", "Secret"):
            raise fail(f"{at}.kind", "must be ConfigMap or Secret")
        if not r.get("name"):
            raise fail(f"{at}.name", "required")
        refs.append(
            SubstituteRef(
                kind=RefKind(r["kind"]), name=str(r["name"]), namespace=namespace,
                optional=bool(r.get("optional")),
            )
        )  # fmt: skip
    decryption = None
    dec = spec.get("decryption")
    if dec:
        if dec.get("provider") != "sops":
            raise fail(
                "spec.decryption.provider", f"{dec.get('provider')!r}: only sops is supported"
            )
        name = (dec.get("secretRef") or {}).get("name")
        parent_keys: tuple[str, ...] = ()
        if parent.postbuild is not None and parent.postbuild.decryption is not None:
            parent_keys = parent.postbuild.decryption.key_files  # the agent's own keys
        decryption = DecryptionSpec(
            secret_name=name or None, secret_namespace=namespace, key_files=parent_keys
        )
    out = PostBuildSpec(
        substitute=str_map(pb.get("substitute"), "spec.postBuild.substitute", fail),
        substitute_from=tuple(refs),
        decryption=decryption,
    )
    return (None if out.empty else out), unhonoured


def _refs(
    items: object, field: str, namespace: str, fail: Fail, *, kind: bool
) -> tuple[ObjectRef, ...]:
    out = []
    for i, d in enumerate(as_list(items, field, fail)):
        if not isinstance(d, Mapping) or not d.get("name"):
            raise fail(f"{field}[{i}].name", "required")
        if kind:
            if not d.get("kind") or not d.get("apiVersion"):
                raise fail(f"{field}[{i}]", "apiVersion and kind are required")
            gvk = GVK.from_api_version(str(d["apiVersion"]), str(d["kind"]))
            group, k, version = gvk.group, gvk.kind, gvk.version
        else:
            group, k, version = KUSTOMIZE_GROUP, KUSTOMIZATION.kind, None
        out.append(
            ObjectRef(
                group=group, kind=k, name=str(d["name"]),
                namespace=str(d.get("namespace") or namespace), version=version,
            )
        )  # fmt: skip
    return tuple(out)


async def _remembered(declared_by: ObjectRef, parent: SourceConfig, ctx: Context) -> Repository:
    """The repository the child of `declared_by` last synced, from its GitSource object
    (`gitkrm-system`); the parent's when there is none."""
    gitsource = await ctx.get(
        ObjectRef(group=GITSOURCE_GROUP, kind=GITSOURCE_KIND, name=child_name(declared_by),
                  namespace=GITSOURCE_NAMESPACE)
    )  # fmt: skip
    spec = (gitsource or {}).get("spec") or {}
    if not spec.get("url"):
        return Repository(url=parent.url, ref=parent.ref)
    ref = spec.get("ref") or {}
    gref: GitRef | None
    try:
        gref = GitRef.from_flags(
            branch=ref.get("branch"), tag=ref.get("tag"), commit=ref.get("commit")
        )
    except BadRequest:
        gref = parent.ref
    url = str(spec["url"])
    return Repository(url=url, ref=gref, auth=parent.auth if url == parent.safe_url else None)


async def read(obj: Obj, ctx: Context) -> ChildSpec:
    """The child source a Kustomization declares."""
    parent = ctx.parent
    fail = FieldErrors(obj, parent)
    ks = cast(Kustomization, obj)
    gvk = GVK.of(obj)
    if gvk.group != KUSTOMIZE_GROUP or gvk.kind != KUSTOMIZATION.kind:
        raise fail("kind", f"{obj.get('apiVersion')} {obj.get('kind')} is not a Flux Kustomization")
    if gvk.version not in KUSTOMIZATION_VERSIONS:
        raise fail("apiVersion", f"{obj.get('apiVersion')}: gitkrm reads v1 and v1beta2")
    md = ks.get("metadata") or {}
    name, namespace = md.get("name") or "", md.get("namespace") or "default"
    spec: KustomizationSpec = ks.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise fail("spec", "must be an object")
    asked = {k: v for k, v in spec.items() if k != "force" or v}  # force: false, Flux's default
    unhonoured = unhonoured_fields(asked, at="spec", known=_MAPPED, reasons=_UNHONOURED)
    if spec.get("kubeConfig"):
        raise fail("spec.kubeConfig", REMOTE_CLUSTER)
    if "prune" not in spec:
        raise fail("spec.prune", "required")
    interval = duration(spec.get("interval"), "spec.interval", fail)
    if not interval or interval <= 0:
        raise fail("spec.interval", "required, more than 0s")
    timeout = duration(spec.get("timeout"), "spec.timeout", fail) or interval
    src = spec.get("sourceRef") or {}
    if not src.get("name"):
        raise fail("spec.sourceRef.name", "required")
    kind = src.get("kind")
    if kind not in (GIT_REPOSITORY.kind, EXTERNAL_ARTIFACT.kind, OCI_REPOSITORY.kind):
        raise fail(
            "spec.sourceRef.kind",
            f"{kind!r}: gitkrm reads GitRepository, OCIRepository and ExternalArtifact "
            "sources only",
        )
    deleting = bool(md.get("deletionTimestamp"))
    artifact = oci = None
    try:
        if kind == OCI_REPOSITORY.kind:
            from .flux_oci import read_oci_repository

            repo, oci = await read_oci_repository(
                ObjectRef(group=OCI_REPOSITORY.group, kind=OCI_REPOSITORY.kind,
                          name=src["name"], namespace=src.get("namespace") or namespace),
                get=ctx.get, fail=fail,
            )  # fmt: skip
        elif kind == EXTERNAL_ARTIFACT.kind:
            from .flux_artifacts import external_artifact

            repo, artifact, more = await external_artifact(
                src, namespace, parent=parent, ctx=ctx, fail=fail
            )
            unhonoured.extend(more)
        else:
            source_ref = ObjectRef(
                group=GIT_REPOSITORY.group, kind=GIT_REPOSITORY.kind, name=src["name"],
                namespace=src.get("namespace") or namespace,
            )  # fmt: skip
            repo = await read_repository(source_ref, parent=parent, get=ctx.get, fail=fail)
    except ManifestError:
        if not deleting:
            raise
        # Being deleted (often with its GitRepository, in one commit): what the tree needs
        # now is prune, the finalizer and the repository the child synced, which its own
        # GitSource object remembers (as Flux's inventory does for garbage collection).
        repo = await _remembered(
            ObjectRef(group=KUSTOMIZE_GROUP, kind=KUSTOMIZATION.kind, name=name,
                      namespace=namespace),
            parent, ctx,
        )  # fmt: skip
        if repo.url.startswith("oci://"):
            from gitkrm.source.oci_source import OciArtifact

            oci = OciArtifact(url=repo.url, removed=True)  # nothing more is remembered
    unhonoured.extend(repo.unhonoured)
    path = source_path(spec.get("path"), fail)
    prune = bool(spec.get("prune"))
    policy = spec.get("deletionPolicy")
    if policy not in (None, "MirrorPrune") and not (
        (policy == "Delete" and prune) or (policy == "Orphan" and not prune)
    ):
        unhonoured.append(
            Unhonoured(
                "spec.deletionPolicy", f"{policy}: gitkrm prunes on deletion as spec.prune says"
            )
        )
    postbuild, pb_unhonoured = postbuild_of(spec, namespace, parent, fail)
    unhonoured.extend(pb_unhonoured)
    try:
        checks = HealthChecks.from_spec(spec.get("healthCheckExprs"))
    except BadRequest as e:
        raise fail("spec.healthCheckExprs", e.message) from None
    target_ns = spec.get("targetNamespace") or None
    declared_by = ObjectRef(
        group=KUSTOMIZE_GROUP, kind=KUSTOMIZATION.kind, name=name, namespace=namespace,
        version=gvk.version,
    )  # fmt: skip
    config = dataclasses.replace(
        # a Kustomization's path may declare more of the parent's peers: it interprets them
        repo.child_config(declared_by=declared_by, path=path, parent=parent),
        interval=min(interval, repo.interval) if repo.interval and not repo.is_parent else interval,
        timeout=repo.timeout,
        retry_interval=duration(spec.get("retryInterval"), "spec.retryInterval", fail) or None,
        health_timeout=timeout,
        default_namespace=target_ns,
        prune=prune,
        suspend=bool(spec.get("suspend")) or repo.suspend,
        postbuild=postbuild,
        health_checks=checks,
        overlay=overlay_of(spec, fail),
        artifact=artifact,
        oci=oci,
    )
    same = artifact is None and repo.is_parent and source_path(parent.path, fail) == path
    return ChildSpec(
        declared_by=declared_by,
        config=config,
        depends_on=_refs(spec.get("dependsOn"), "spec.dependsOn", namespace, fail, kind=False),
        wait=bool(spec.get("wait")),
        health_checks=_refs(
            spec.get("healthChecks"), "spec.healthChecks", namespace, fail, kind=True
        ),
        finalizer=FINALIZER,
        unhonoured=tuple(unhonoured),
        same_as_parent=same,
    )  # fmt: skip


class FluxInterpreter:
    """Flux's Kustomization (the tree's registry uses `INTERPRETER`)."""

    peer: Peer | None = Peer.FLUX
    kinds = frozenset({KUSTOMIZATION})

    async def child(self, obj: Obj, ctx: Context) -> ChildSpec:
        return await read(obj, ctx)

    def status(self, obj: Obj, state: ChildState) -> Obj:
        from .flux_status import kustomization_status

        return kustomization_status(obj, state)

    def source_statuses(self, obj: Obj, state: ChildState) -> Sequence[SourceStatus]:
        from .flux_sources import kustomization_sources

        return kustomization_sources(obj, state)

    def crds(self) -> Sequence[Obj]:
        from . import flux_inert
        from .flux_crds import crds

        return [*crds(), *flux_inert.crds()]


INTERPRETER: Final = FluxInterpreter()
