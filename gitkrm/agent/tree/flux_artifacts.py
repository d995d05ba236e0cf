"""Flux's `ArtifactGenerator` (source-watcher, `source.extensions.fluxcd.io/v1beta1`) read
into the recipes of the `ExternalArtifact`s it makes, and a Kustomization's
`sourceRef: {kind: ExternalArtifact}` read into the artifact its child syncs.

A Kustomization over an ExternalArtifact does not wait for the object: the generator that
makes it (the one the ExternalArtifact's `spec.sourceRef` names, or, before it exists, the
ArtifactGenerator of its namespace with an artifact of that name) is read, and the child
syncs that artifact of the generator's repository itself (`gitkrm.source.artifact`): the
same content, whichever runs first. Sources are GitRepositories (read as a Kustomization's
are, `flux_repo`); other kinds, `pathPattern` and the `Extract` strategy are refused with
the field named. All sources of a generator must name the same repository and ref.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gitkrm.errors import BadRequest
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.krm.names import is_dns1123_subdomain
from gitkrm.source.artifact_copy import (
    ArtifactRecipe,
    CopyOp,
    Strategy,
    check_exclude,
    parse_from,
    parse_to,
)

from ..config import SourceConfig
from .fields import Fail, as_list, objects, str_map, unhonoured_fields
from .flux_repo import Repository, read_repository
from .flux_spec import ARTIFACT_GENERATOR, EXTERNAL_ARTIFACT, GIT_REPOSITORY
from .model import Context, Unhonoured

GENERATOR_GVK: Final = GVK(group=ARTIFACT_GENERATOR.group, version="v1beta1",
                           kind=ARTIFACT_GENERATOR.kind)  # fmt: skip
_ALIAS: Final = re.compile(r"^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$")
_HONOURED: Final = frozenset({"sources", "artifacts", "commonMetadata"})


@dataclass(frozen=True, slots=True)
class Generator:
    """An ArtifactGenerator as gitkrm reads it."""

    ref: ObjectRef
    repository: Repository
    recipes: tuple[ArtifactRecipe, ...]
    origin: Mapping[str, bool]
    """Artifact name -> whether `originRevision` names a source (its revision is then
    recorded as the artifact's `org.opencontainers.image.revision`)."""
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    unhonoured: tuple[Unhonoured, ...] = ()

    def recipe(self, name: str) -> ArtifactRecipe | None:
        return next((r for r in self.recipes if r.name == name), None)


def _alias_ref(value: object, field: str, aliases: Mapping[str, Any], fail: Fail) -> str:
    text = str(value)
    alias = text.removeprefix("@")
    if not text.startswith("@") or alias not in aliases:
        raise fail(field, f"{text!r}: must be '@<alias>' of a source ({', '.join(aliases)})")
    return alias


def _copy_ops(
    item: Mapping[str, Any], at: str, aliases: Mapping[str, Any], fail: Fail
) -> list[CopyOp]:
    ops = []
    entries = as_list(item.get("copy"), f"{at}.copy", fail)
    if not entries:
        raise fail(f"{at}.copy", "required: at least one copy operation")
    for here, c in objects(entries, f"{at}.copy", fail, fields="from, to, exclude, strategy"):
        try:
            alias, pattern = parse_from(str(c.get("from") or ""))
        except BadRequest as e:
            raise fail(f"{here}.from", e.message) from None
        if alias not in aliases:
            raise fail(f"{here}.from", f"'@{alias}' is not the alias of a source")
        try:
            to = parse_to(str(c.get("to") or ""))
        except BadRequest as e:
            raise fail(f"{here}.to", e.message) from None
        exclude = tuple(str(x) for x in as_list(c.get("exclude"), f"{here}.exclude", fail))
        for k, pattern_ in enumerate(exclude):
            try:
                check_exclude(pattern_)
            except BadRequest as e:
                raise fail(f"{here}.exclude[{k}]", e.message) from None
        strategy = str(c.get("strategy") or Strategy.OVERWRITE)
        if strategy not in (Strategy.OVERWRITE, Strategy.MERGE):
            raise fail(
                f"{here}.strategy",
                f"{strategy!r}: gitkrm supports Overwrite and Merge (Extract unpacks tarballs "
                "and is not supported)",
            )
        ops.append(CopyOp(alias, pattern, to, exclude, Strategy(strategy)))
    return ops


async def read_generator(obj: Obj, *, parent: SourceConfig, ctx: Context, fail: Fail) -> Generator:
    """The generator `obj`; `fail` names its fields."""
    md = obj.get("metadata") or {}
    namespace = str(md.get("namespace") or "default")
    ref = ObjectRef(group=ARTIFACT_GENERATOR.group, kind=ARTIFACT_GENERATOR.kind,
                    name=str(md.get("name") or ""), namespace=namespace)  # fmt: skip
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise fail("spec", "must be an object")
    if spec.get("pathPattern"):
        raise fail(
            "spec.pathPattern",
            "directory discovery is not supported by gitkrm; list the artifacts",
        )
    unhonoured = unhonoured_fields(spec, at="spec", known=_HONOURED)
    sources: dict[str, ObjectRef] = {}
    for at, s in objects(
        spec.get("sources"), "spec.sources", fail, fields="alias, kind, name, namespace"
    ):
        alias = str(s.get("alias") or "")
        if not _ALIAS.match(alias):
            raise fail(f"{at}.alias", f"{alias!r}: lower-case letters, digits, '-' and '_'")
        if alias in sources:
            raise fail(f"{at}.alias", f"{alias!r} is used twice")
        if s.get("kind") != GIT_REPOSITORY.kind:
            raise fail(f"{at}.kind", f"{s.get('kind')!r}: gitkrm reads GitRepository sources only")
        if not s.get("name"):
            raise fail(f"{at}.name", "required")
        sources[alias] = ObjectRef(
            group=GIT_REPOSITORY.group, kind=GIT_REPOSITORY.kind, name=str(s["name"]),
            namespace=str(s.get("namespace") or namespace),
        )  # fmt: skip
    if not sources:
        raise fail("spec.sources", "required: at least one source")
    repository: Repository | None = None
    first = ""
    for alias, source_ref in sources.items():

        def repo_fail(field: str, message: str, alias: str = alias) -> Exception:
            return fail(f"spec.sources[{alias}]", message.removeprefix("spec.sourceRef: "))

        repo = await read_repository(source_ref, parent=parent, get=ctx.get, fail=repo_fail)
        if repository is None:
            repository, first = repo, alias
        elif (repo.url, repo.ref) != (repository.url, repository.ref):
            raise fail(
                f"spec.sources[{alias}]",
                f"names another repository or ref than '@{first}': gitkrm composes artifacts "
                "of one repository",
            )
    assert repository is not None
    unhonoured.extend(repository.unhonoured)
    recipes: list[ArtifactRecipe] = []
    origin: dict[str, bool] = {}
    for at, a in objects(
        spec.get("artifacts"), "spec.artifacts", fail, fields="name, copy, revision, originRevision"
    ):
        name = str(a.get("name") or "")
        errs = is_dns1123_subdomain(name)
        if errs:
            raise fail(f"{at}.name", f"{name!r}: {'; '.join(errs)}")
        if name in origin:
            raise fail(f"{at}.name", f"{name!r} is used twice")
        pinned = False
        if a.get("revision"):
            _alias_ref(a["revision"], f"{at}.revision", sources, fail)
            pinned = True
        origin[name] = bool(a.get("originRevision")) and bool(
            _alias_ref(a["originRevision"], f"{at}.originRevision", sources, fail)
        )
        recipes.append(
            ArtifactRecipe(
                name=name,
                copy=tuple(_copy_ops(a, at, sources, fail)),
                aliases=tuple((alias, "") for alias in sources),
                pinned=pinned,
            )
        )
    if not recipes:
        raise fail("spec.artifacts", "required: at least one artifact")
    md_spec = spec.get("commonMetadata") or {}
    if not isinstance(md_spec, Mapping):
        raise fail("spec.commonMetadata", "must be an object (labels, annotations)")
    return Generator(
        ref=ref,
        repository=repository,
        recipes=tuple(recipes),
        origin=origin,
        labels=str_map(md_spec.get("labels"), "spec.commonMetadata.labels", fail),
        annotations=str_map(md_spec.get("annotations"), "spec.commonMetadata.annotations", fail),
        unhonoured=tuple(unhonoured),
    )


async def _generator_for(ea: ObjectRef, ctx: Context, fail: Fail) -> Obj:
    """The ArtifactGenerator that makes the ExternalArtifact `ea`."""
    where = f"ExternalArtifact {ea.namespace}/{ea.name}"
    live = await ctx.get(ea)
    producer: Mapping[str, Any] = ((live or {}).get("spec") or {}).get("sourceRef") or {}
    if producer:
        gvk = GVK.from_api_version(str(producer.get("apiVersion") or ""), str(producer.get("kind")))
        if (gvk.group, gvk.kind) != (ARTIFACT_GENERATOR.group, ARTIFACT_GENERATOR.kind):
            raise fail(
                "spec.sourceRef",
                f"{where} is made by {producer.get('kind')} {producer.get('name')}: gitkrm "
                "reads the artifacts of ArtifactGenerators only",
            )
        ref = ObjectRef(group=gvk.group, kind=gvk.kind, name=str(producer.get("name") or ""),
                        namespace=str(producer.get("namespace") or ea.namespace))  # fmt: skip
        found = await ctx.get(ref)
        if found is None:
            raise fail("spec.sourceRef", f"{where}: ArtifactGenerator {ref.namespace}/{ref.name} "
                       "not found")  # fmt: skip
        return found
    for gen in await ctx.list(GENERATOR_GVK, namespace=ea.namespace or "default"):
        for a in (gen.get("spec") or {}).get("artifacts") or ():
            if isinstance(a, Mapping) and a.get("name") == ea.name:
                return gen
    raise fail(
        "spec.sourceRef",
        f"{where} not found, and no ArtifactGenerator in namespace {ea.namespace} makes it",
    )


async def external_artifact(
    src: Mapping[str, Any], namespace: str, *, parent: SourceConfig, ctx: Context, fail: Fail
) -> tuple[Repository, ArtifactRecipe, tuple[Unhonoured, ...]]:
    """The repository and artifact recipe of a Kustomization's `sourceRef` ExternalArtifact;
    errors name the Kustomization's `spec.sourceRef` and the generator's field."""
    ea = ObjectRef(
        group=EXTERNAL_ARTIFACT.group,
        kind=EXTERNAL_ARTIFACT.kind,
        name=str(src["name"]),
        namespace=str(src.get("namespace") or namespace),
    )
    gen = await _generator_for(ea, ctx, fail)
    gmd = gen.get("metadata") or {}
    where = f"ArtifactGenerator {gmd.get('namespace')}/{gmd.get('name')}"

    def gen_fail(field: str, message: str) -> Exception:
        return fail("spec.sourceRef", f"{where}: {field}: {message}")

    generator = await read_generator(gen, parent=parent, ctx=ctx, fail=gen_fail)
    recipe = generator.recipe(ea.name)
    if recipe is None:
        raise fail("spec.sourceRef", f"{where} makes no artifact named {ea.name}")
    own = tuple(u for u in generator.unhonoured if u not in generator.repository.unhonoured)
    return generator.repository, recipe, own


def inventory_entries(
    refs: Sequence[ObjectRef], digests: Mapping[str, str]
) -> list[dict[str, str]]:
    """source-watcher's `status.inventory`: one entry per ExternalArtifact."""
    out = []
    for r in refs:
        if (r.group, r.kind) != (EXTERNAL_ARTIFACT.group, EXTERNAL_ARTIFACT.kind):
            continue
        digest = digests.get(r.name, "")
        filename = f"{digest.partition(':')[2][:16]}.tar.gz" if digest else ""
        out.append(
            {"name": r.name, "namespace": r.namespace or "", "digest": digest, "filename": filename}
        )
    return sorted(out, key=lambda e: (e["namespace"], e["name"]))
