"""A render's parsed files made desired objects, as the store would admit them.

Built-in kinds were prepared when their file was parsed; custom resources are prepared
here against a registry of the built-in kinds, the store's CRDs and the revision's own
(one registry kept per CRD set, which rarely changes). Each file's desired objects and
problems are cached by path, content and registry, so a revision that changes one file
assembles one file. Client-side apply also refuses objects too big for their
last-applied annotation.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from gitkrm.errors import GitkrmError
from gitkrm.krm import GroupKind, Obj
from gitkrm.krm.names import TOTAL_ANNOTATION_SIZE_LIMIT
from gitkrm.schema import Registry
from gitkrm.sync import keys, peers
from gitkrm.sync.cache import GenerationCache
from gitkrm.sync.desired import Desired, desired_of
from gitkrm.sync.parse import (
    ParseContext,
    ParsedFile,
    ParsedObject,
    parse_object,
    prepare_unchecked,
    skips_dry_run,
)
from gitkrm.sync.problems import Problem, describe_ref

_CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")

Outputs = Sequence[tuple[str, str, ParsedFile]]  # (path shown, cache key of content, parsed)


@dataclass(frozen=True, slots=True)
class _Assembled:
    """One file's desired objects and problems (cached by path and content)."""

    desired: tuple[Desired, ...]
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...]


class Assembler:
    """Assembles one source's renders (see the module docstring)."""

    def __init__(self, *, context: ParseContext) -> None:
        self._context = context
        self._deferred: GenerationCache[tuple[bytes, str], ParsedObject] = GenerationCache()
        self._assembled: GenerationCache[tuple[str, str, str], _Assembled] = GenerationCache()
        self._registries: dict[str, Registry] = {}
        self.namespaces: dict[str, str] = {}
        """The render's chart outputs -> their release namespace (their objects' default)."""

    def early(self, path: str, blob: str, pf: ParsedFile) -> None:
        """Assemble a file of built-in kinds as soon as it is parsed (it needs no CRDs)."""
        if pf.error is None and not pf.deferred:
            key = (path, blob, "")
            if self._assembled.get(key) is None:
                self._assembled.put(key, self._assemble(path, pf.objects, None, ""))

    def registry(
        self, outputs: Outputs, store_crds: Sequence[Obj], problems: list[Problem]
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

    def desired(
        self,
        outputs: Outputs,
        registry: Registry,
        fingerprint: str,
        problems: list[Problem],
        warnings: list[Problem],
    ) -> tuple[list[Desired], int]:
        """The desired objects of every output, in order, and how many objects were read
        (valid or not); problems and warnings go to their lists."""
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
        return desired, count

    def rotate(self) -> None:
        """End of a render: forget what recent renders did not use."""
        self._deferred.rotate()
        self._assembled.rotate()

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
                po = self._resolve(po, registry, fingerprint, self.namespaces.get(path))
            line = po.line or None
            if po.problems:
                problems.extend(Problem(path, line, po.describe(), m) for m in po.problems)
                continue
            warnings.extend(Problem(path, line, po.describe(), w) for w in po.warnings)
            d, msgs = desired_of(po, path=path)
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
        ctx = self._context
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
                hit = prepare_unchecked(po, self._context)
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
    found = registry.versions_of(GroupKind(group=group, kind=po.kind))
    if found:
        # A built-in kind at a version Kubernetes removed (autoscaling/v2beta1) has no CRD.
        by = "its CustomResourceDefinition serves" if found[0].custom else "the API serves it in"
        return (
            f'unknown kind "{po.kind}" in version "{po.api_version}": {by} '
            f"{', '.join(i.version for i in found)}, not this version"
        )
    where = f" (group {group})" if group else ""
    peer = peers.interpreted_by(group, po.kind)
    hint = f" (a kind of {peer.title}'s: --interpret {peer.flag} registers it)" if peer else ""
    return (
        f'unknown kind "{po.kind}" in version "{po.api_version}": no '
        f"CustomResourceDefinition for it{where} in this revision or in the store{hint}"
    )


def too_big_to_annotate(desired: Sequence[Desired]) -> list[Problem]:
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
