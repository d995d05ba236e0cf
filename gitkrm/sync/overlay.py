"""A source's `Overlay` laid over what its path renders, with kustomize's own semantics.

As kustomize-controller generates a kustomization over a Kustomization's path, gitkrm
writes one over the rendered objects: `resources` (the rendered objects, served through a
FIFO so decrypted Secrets never touch a disk), `namespace`, `namePrefix`/`nameSuffix`
(kustomize fixes the references: a Deployment's ConfigMap, a RoleBinding's subjects),
`patches` (strategic merge or JSON 6902, with targets), `images` and `components` (paths
relative to the source path, confined to the repository and copied with what they read),
then `kustomize build` runs on it. `labels`/`annotations` (Flux's `commonMetadata`) are
then set on each object's metadata, as Flux does (selectors and templates untouched).

Each object carries a temporary origin annotation through the build, so the result is
attributed to the file and line it came from (objects a component adds are attributed to
`spec.components`). The result is cached by the digest of its inputs: the rendered files'
content keys, the overlay and the blobs the components read.

Callers: `Renderer`, after the post-build steps (Flux substitutes after its build, so
the overlay's own values, patches and images included, are substituted here with the
same variables) and before validation. Argo CD's `spec.source.kustomize` options use the
same `Overlay`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson
import yaml

from gitkrm.errors import BadRequest
from gitkrm.krm.yamlio import load_manifests
from gitkrm.source.snapshot import Snapshot
from gitkrm.sync import kustomize
from gitkrm.sync.cache import GenerationCache
from gitkrm.sync.overlay_spec import Overlay
from gitkrm.sync.parse import ParseContext, ParsedFile, ParsedObject, builtin_registry, parse_object
from gitkrm.sync.postbuild import PostBuild
from gitkrm.sync.problems import Problem

ORIGIN: Final = "gitkrm.io/overlay-origin"
COMPONENTS_PATH: Final = "spec.components"  # where objects a component adds are shown
_DIR: Final = "overlay"
_REPO: Final = "repo"

Output = tuple[str, str, ParsedFile]  # (path shown, content key, parsed file)


def kustomization(overlay: Overlay, components: Sequence[str]) -> dict[str, Any]:
    """The generated kustomization (components: repository paths)."""
    k: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["resources.yaml"],
    }
    if overlay.namespace:
        k["namespace"] = overlay.namespace
    if overlay.name_prefix:
        k["namePrefix"] = overlay.name_prefix
    if overlay.name_suffix:
        k["nameSuffix"] = overlay.name_suffix
    if overlay.patches:
        k["patches"] = [
            {"patch": p.patch, **({"target": dict(p.target)} if p.target else {})}
            for p in overlay.patches
        ]
    if overlay.replicas:
        k["replicas"] = [{"name": n, "count": c} for n, c in overlay.replicas]
    if overlay.images:
        k["images"] = [
            {
                "name": i.name,
                **({"newName": i.new_name} if i.new_name else {}),
                **({"newTag": i.new_tag} if i.new_tag is not None else {}),
                **({"digest": i.digest} if i.digest else {}),
            }
            for i in overlay.images
        ]
    if components:
        k["components"] = [f"../{_REPO}/{c}" for c in components]
    return k


def component_paths(overlay: Overlay, prefix: str) -> tuple[list[str], list[str]]:
    """The components' repository paths, and the problems of those that leave it."""
    paths, problems = [], []
    for c in overlay.components:
        p = posixpath.normpath(posixpath.join(prefix or ".", c))
        if p == ".." or p.startswith("../") or c.startswith("/"):
            problems.append(f"{COMPONENTS_PATH} entry {c!r} leaves the repository")
        else:
            paths.append("" if p == "." else p)
    return paths, problems


def read_patch_files(overlay: Overlay, snapshot: Snapshot, prefix: str) -> Overlay:
    """The overlay with each patch file's text in place of its path (the text, not the
    path, is what the render's cache key holds). BadRequest naming the entry whose file
    leaves the repository or is not in the revision."""
    if not any(p.path is not None for p in overlay.patches):
        return overlay
    tree = snapshot.tree
    files = tree.files if tree is not None else snapshot.files
    patches = []
    for i, p in enumerate(overlay.patches):
        if p.path is None:
            patches.append(p)
            continue
        where = posixpath.normpath(posixpath.join(prefix or ".", p.path))
        if where == ".." or where.startswith("../") or p.path.startswith("/"):
            raise BadRequest(f"patches[{i}].path {p.path!r} leaves the repository")
        if where not in files:
            raise BadRequest(f"patches[{i}].path {p.path!r}: no file {where!r} in the revision")
        text = snapshot.read_tree([where])[where]  # the repository's path, or the source's
        patches.append(dataclasses.replace(p, patch=text.decode("utf-8", "replace"), path=None))
    return dataclasses.replace(overlay, patches=tuple(patches))


def substituted(overlay: Overlay, postbuild: PostBuild | None) -> Overlay:
    """The overlay with the post-build variables in its values, as Flux substitutes
    what its build (patches, images, names) put into the objects. SubstitutionError
    naming the field."""
    if postbuild is None or not postbuild.substitutes or postbuild.problems:
        return overlay
    from gitkrm.sync.envsubst import SubstitutionError, substitute

    def sub(text: str, field: str) -> str:
        try:
            return substitute(text, postbuild.variables, strict=postbuild.strict)
        except SubstitutionError as e:
            raise SubstitutionError(f"{field}: {e.message}", e.line) from None

    def opt(text: str | None, field: str) -> str | None:
        return None if text is None else sub(text, field)

    return dataclasses.replace(
        overlay,
        namespace=opt(overlay.namespace, "namespace"),
        name_prefix=sub(overlay.name_prefix, "namePrefix"),
        name_suffix=sub(overlay.name_suffix, "nameSuffix"),
        patches=tuple(
            dataclasses.replace(p, patch=sub(p.patch, f"patches[{i}]"))
            for i, p in enumerate(overlay.patches)
        ),
        images=tuple(
            dataclasses.replace(
                im,
                new_name=opt(im.new_name, f"images[{i}].newName"),
                new_tag=opt(im.new_tag, f"images[{i}].newTag"),
                digest=opt(im.digest, f"images[{i}].digest"),
            )
            for i, im in enumerate(overlay.images)
        ),
        labels=tuple((k, sub(v, f"labels.{k}")) for k, v in overlay.labels),
        annotations=tuple((k, sub(v, f"annotations.{k}")) for k, v in overlay.annotations),
    )


def overlay_needed(overlay: Overlay, outputs: Sequence[Output]) -> bool:
    """Whether a build has anything to do: objects to transform, or components (which
    may add some)."""
    return bool(overlay.components) or any(pf.objects for _, _, pf in outputs)


def _set_metadata(obj: dict[str, Any], overlay: Overlay) -> None:
    md = obj.setdefault("metadata", {})
    for field, pairs in (("labels", overlay.labels), ("annotations", overlay.annotations)):
        if pairs:
            current = md.get(field) or {}
            md[field] = {**current, **dict(pairs)}


class OverlayStage:
    """Applies one source's overlay to its renders (caching by input digest)."""

    def __init__(self, overlay: Overlay, *, context: ParseContext) -> None:
        self.overlay = overlay
        self.context = context
        self._done: GenerationCache[str, tuple[list[Output], tuple[Problem, ...]]] = (
            GenerationCache()
        )

    async def apply(
        self,
        outputs: Sequence[Output],
        snapshot: Snapshot,
        problems: list[Problem],
        postbuild: PostBuild | None = None,
        *,
        variables: Mapping[str, str] | None = None,
        annotations: bool = False,
    ) -> list[Output]:
        """`outputs` with the overlay applied (its values substituted with `postbuild`'s
        variables, or with Argo CD's build environment `variables`, the common annotations
        too when `annotations`: `gitkrm.sync.buildenv`); problems added to `problems`. A
        render that already has problems is returned as it is (it is refused anyway)."""
        self._done.rotate()
        if problems or any(
            pf.error is not None or any(po.problems for po in pf.objects) for _, _, pf in outputs
        ):
            return list(outputs)
        if not overlay_needed(self.overlay, outputs):
            return list(outputs)
        from gitkrm.sync.envsubst import SubstitutionError

        try:
            overlay = substituted(self.overlay, postbuild)
        except SubstitutionError as e:
            problems.append(Problem("spec (overlay)", None, None, e.message))
            return list(outputs)
        if variables is not None:
            from gitkrm.sync import buildenv

            overlay = buildenv.overlay(overlay, variables, annotations=annotations)
        tree = snapshot.tree
        prefix = tree.root if tree is not None else ""
        try:
            overlay = read_patch_files(overlay, snapshot, prefix)
        except BadRequest as e:
            problems.append(Problem("spec (overlay)", None, None, e.message))
            return list(outputs)
        components, bad = component_paths(overlay, prefix)
        if bad:
            problems.extend(Problem(COMPONENTS_PATH, None, None, m) for m in bad)
            return list(outputs)
        files = tree.files if tree is not None else snapshot.files
        needed: set[str] = set()
        if components:
            known = kustomize.kustomization_files(files)
            for c in components:
                if c not in known:
                    problems.append(
                        Problem(COMPONENTS_PATH, None, None, f"{c or '.'!r} holds no kustomization")
                    )
                    return list(outputs)
            read = snapshot.read_tree if tree is not None else snapshot.read_many
            refused = tree.refused if tree is not None else None
            layout = kustomize.layout(set(files), components, read, refused=refused)
            for c in components:
                kfile = layout.kfiles[c]
                if kfile in layout.problems:
                    problems.append(Problem(kfile, None, None, layout.problems[kfile]))
                    return list(outputs)
                needed |= layout.needs.get(c, set())
        h = hashlib.sha256(repr(overlay).encode())
        for path, key, _ in outputs:
            h.update(f"\0{path}\0{key}".encode())
        for p in sorted(needed):
            h.update(f"\1{p}\0{files[p].blob}".encode())
        digest = h.hexdigest()
        hit = self._done.get(digest)
        if hit is None:
            hit = await self._build(
                overlay, outputs, components, needed, snapshot, tree is not None, digest
            )
            self._done.put(digest, hit)
        problems.extend(hit[1])
        return list(hit[0])

    async def _build(
        self,
        overlay: Overlay,
        outputs: Sequence[Output],
        components: Sequence[str],
        needed: set[str],
        snapshot: Snapshot,
        whole_tree: bool,
        digest: str,
    ) -> tuple[list[Output], tuple[Problem, ...]]:
        origins: list[ParsedObject] = []
        docs: list[dict[str, Any]] = []
        secrets = False
        for index, (_, _, pf) in enumerate(outputs):
            for po in pf.objects:
                obj = orjson.loads(po.doc)
                md = obj.setdefault("metadata", {})
                md.setdefault("annotations", {})[ORIGIN] = f"{index}:{len(origins)}"
                origins.append(po)
                docs.append(obj)
                secrets = secrets or po.kind == "Secret"
        resources = yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False).encode()
        k = kustomization(overlay, components)
        contents: dict[str, bytes] = {
            f"{_DIR}/kustomization.yaml": yaml.dump(k, Dumper=yaml.CSafeDumper).encode()
        }
        if needed:
            read = snapshot.read_tree(needed) if whole_tree else snapshot.read_many(needed)
            contents.update({f"{_REPO}/{p}": data for p, data in read.items()})
        served = {f"{_DIR}/resources.yaml": resources}
        try:
            if secrets:  # decrypted or not, a Secret's values never touch a disk
                from gitkrm.sync.kustomize_sops import fed

                out = await kustomize.build(_DIR, contents, fifos=lambda base: fed(base, served))
            else:
                out = await kustomize.build(_DIR, {**contents, **served})
        except BadRequest as e:
            return list(outputs), (Problem("spec (overlay)", None, None, e.message),)
        return self._attribute(overlay, outputs, out, origins, digest), ()

    def _attribute(
        self,
        overlay: Overlay,
        outputs: Sequence[Output],
        out: bytes,
        origins: Sequence[ParsedObject],
        digest: str,
    ) -> list[Output]:
        """The built objects, parsed again and given back to the files they came from."""
        per_file: list[list[ParsedObject]] = [[] for _ in outputs]
        added: list[ParsedObject] = []
        registry = builtin_registry()
        for n, m in enumerate(load_manifests(out, path="overlay")):
            obj = m.obj
            md = obj.get("metadata") or {}
            ann = md.get("annotations") or {}
            origin = ann.pop(ORIGIN, None)
            if not ann:
                md.pop("annotations", None)
            _set_metadata(obj, overlay)
            if isinstance(origin, str) and ":" in origin:
                file_index, _, obj_index = origin.partition(":")
                src = origins[int(obj_index)]
                po = parse_object(
                    obj, line=src.line, index=src.document, ctx=self.context, registry=registry
                )
                per_file[int(file_index)].append(po)
            else:
                added.append(
                    parse_object(obj, line=0, index=n, ctx=self.context, registry=registry)
                )
        result: list[Output] = []
        for (path, key, _), objects in zip(outputs, per_file, strict=True):
            deferred = any(not po.resolved for po in objects)
            result.append(
                (path, f"{key}:overlay:{digest[:16]}", ParsedFile(tuple(objects), None, deferred))
            )
        if added:
            deferred = any(not po.resolved for po in added)
            result.append(
                (COMPONENTS_PATH, f"overlay:{digest}", ParsedFile(tuple(added), None, deferred))
            )
        return result
