"""One manifest file to desired objects: parse, prepare and admit, as a pure function.

This is the part of rendering that depends only on a file's bytes (and the source's
fixed settings), so its result is cached by Git blob id and may run in worker processes.
Kinds the built-in registry does not know (custom resources) are left `resolved=False`
for the renderer, which knows the CRDs of the revision and of the store.

Preparing an object is what kubectl does before an apply, plus gitkrm's labels: the
default namespace for namespaced kinds, server-owned metadata and `status` (of kinds
with a status subresource) dropped, the last-applied and revision annotations removed,
a Secret's `stringData` merged into `data` (as the server stores it).
The prepared object serialized with sorted keys is the last-applied configuration
(compact JSON, as kubectl writes it). Admission runs on the object afterwards, in
place, as the store would run it on create, so an invalid manifest is found before
anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from gitkrm.charts.hooks import argo_reading
from gitkrm.errors import GitkrmError, ManifestError, NotFound
from gitkrm.krm import GVK, FieldValidation, Obj
from gitkrm.krm.yamlio import DEFAULT_MAX_BYTES, load_manifests
from gitkrm.schema import Registry, ResourceInfo
from gitkrm.schema.secrets import merge_string_data
from gitkrm.sync import keys
from gitkrm.sync.peers import ARGO_SYNC_OPTIONS, is_hook
from gitkrm.sync.peers import read as read_peers

_SORTED = orjson.OPT_SORT_KEYS


@dataclass(frozen=True, slots=True)
class ParseContext:
    """The settings a parsed file depends on (constant for one source)."""

    source: str | None = None  # None: no gitkrm labels (offline validation)
    default_namespace: str | None = None  # None: a missing namespace is a problem
    max_bytes: int = DEFAULT_MAX_BYTES
    argo_cd: bool = False
    """An Argo CD Application's source: Helm's hook annotations on any manifest are read
    as Argo CD reads them (`gitkrm.charts.hooks.argo_reading`), and a cluster-scoped
    object's namespace is dropped, not an error."""
    validate: bool = True
    """False: Argo CD's application-wide `Validate=false`: every object's unknown fields are
    dropped (as each object's own `Validate=false` sync option does)."""


class ParsedObject(NamedTuple):
    """One object of a file. `doc` is the last-applied JSON of the prepared object when
    `resolved`, else the raw object (its kind is not built in). A named tuple: thousands
    travel back from worker processes, and tuples pickle several times faster."""

    doc: bytes
    line: int
    document: int  # the YAML document's index in its file
    api_version: str
    kind: str
    name: str
    namespace: str
    resolved: bool
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def describe(self) -> str:
        name = self.name or "<unnamed>"
        return f"{self.kind} {self.namespace}/{name}" if self.namespace else f"{self.kind} {name}"


class FileError(NamedTuple):
    line: int | None
    object: str | None
    message: str


class ParsedFile(NamedTuple):
    """Every object of one file, or the reason the file can't be read at all. `deferred`:
    some objects wait for the renderer (their kind is not built in). `text`: the file's
    text when a post-build step may rewrite it (it holds `$` or a SOPS mark, see
    `postbuild`), else None."""

    objects: tuple[ParsedObject, ...] = ()
    error: FileError | None = None
    deferred: bool = False
    text: str | None = None


def postbuild_text(data: bytes) -> str | None:
    """The text a post-build step may need: files with `$` (substitution) or `sops`."""
    if b"$" in data or b"sops" in data:
        return data.decode("utf-8", "replace")
    return None


@dataclass(frozen=True, slots=True)
class Prepared:
    doc: bytes
    namespace: str
    problems: tuple[str, ...]
    warnings: tuple[str, ...]


def content_problem(data: bytes) -> FileError | None:
    """Binary or non-UTF-8 content, located by line."""
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        return FileError(line, None, "binary file (a NUL byte): manifests must be UTF-8 text")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        return FileError(line, None, f"not UTF-8 text (invalid byte 0x{data[e.start]:02x})")
    return None


def prepare(obj: Obj, *, info: ResourceInfo, ctx: ParseContext, registry: Registry) -> Prepared:
    """Prepare `obj` (in place) for applying and admit it; the object is spent afterwards."""
    problems: list[str] = []
    md = obj.get("metadata")
    if not isinstance(md, dict):
        md = obj["metadata"] = {} if md is None else md
    if not isinstance(md, dict):
        return Prepared(orjson.dumps(obj, option=_SORTED), "", ("metadata must be a mapping",), ())
    if not md.get("name") and md.get("generateName") and not _hook(md):
        problems.append(
            "metadata.generateName is not supported: gitkrm tracks objects by a fixed "
            "metadata.name (only hooks, annotated argocd.argoproj.io/hook, may use it)"
        )
    ns = md.get("namespace")
    if info.namespaced:
        if not ns and ctx.default_namespace:
            md["namespace"] = ns = ctx.default_namespace
    elif ns:
        if not ctx.argo_cd:  # Argo CD drops it, as kubectl does (`DeduplicateTargetObjects`)
            problems.append(
                f"{info.kind} is cluster-scoped: it must not have a namespace (found {ns!r})"
            )
        del md["namespace"]
        ns = ""
    for f in keys.SERVER_METADATA:
        md.pop(f, None)
    ann = md.get("annotations")
    if isinstance(ann, dict) and (keys.LAST_APPLIED in ann or keys.REVISION in ann):
        ann.pop(keys.LAST_APPLIED, None)
        ann.pop(keys.REVISION, None)
        if not ann:
            del md["annotations"]
    if "status" in info.subresources:
        obj.pop("status", None)
    if info.kind == "Secret" and info.group == "":
        merge_string_data(obj)  # as the server stores it, so it doesn't look like drift
    if ctx.source is not None:
        labels = md.get("labels")
        if labels is None:
            labels = md["labels"] = {}
        if isinstance(labels, dict):  # gitkrm's own key only: the manifest's labels stay
            labels[keys.SOURCE] = ctx.source
    dropped = _validate_false(obj, md, registry, everywhere=not ctx.validate)
    try:
        doc = orjson.dumps(obj, option=_SORTED)
    except TypeError as e:
        return Prepared(b"{}", ns if isinstance(ns, str) else "", (f"not a JSON object: {e}",), ())
    warnings: Sequence[str] = ()
    try:
        warnings = registry.admit(obj, field_validation=FieldValidation.STRICT)
    except GitkrmError as e:
        problems.append(e.message)
    return Prepared(doc, ns if isinstance(ns, str) else "", tuple(problems), (*dropped, *warnings))


def _validate_false(
    obj: Obj, md: dict[str, Any], registry: Registry, *, everywhere: bool
) -> tuple[str, ...]:
    """Argo CD's `Validate=false` (`kubectl apply --validate=false`, fieldValidation=Ignore),
    on the object's sync options or the Application's (`everywhere`): the fields the kind's
    schema does not know are dropped, not an error; a warning names them. Everything else is
    validated as always."""
    ann = md.get("annotations")
    asked = isinstance(ann, dict) and ARGO_SYNC_OPTIONS in ann and not read_peers(ann).validate
    if not (everywhere or asked):
        return ()
    dropped = registry.drop_unknown(obj)
    if not dropped:
        return ()
    return (
        f"Validate=false: unknown field(s) dropped, as the API server does: {', '.join(dropped)}",
    )


def skips_dry_run(raw: bytes) -> bool:
    """Argo CD's `SkipDryRunOnMissingResource=true` on an object of a kind nobody knows yet."""
    if b"SkipDryRunOnMissingResource" not in raw:
        return False
    md = orjson.loads(raw).get("metadata")
    ann = md.get("annotations") if isinstance(md, dict) else None
    return isinstance(ann, dict) and read_peers(ann).skip_dry_run


def prepare_unchecked(po: ParsedObject, ctx: ParseContext) -> ParsedObject:
    """An object of a kind whose CRD is not there yet, prepared without validation (Argo CD's
    SkipDryRunOnMissingResource): it is applied as it is, once its kind is served."""
    obj = orjson.loads(po.doc)
    md = obj.get("metadata")
    if not isinstance(md, dict) or not po.name:
        return po._replace(problems=("metadata.name is required",))
    for f in keys.SERVER_METADATA:
        md.pop(f, None)
    obj.pop("status", None)
    if ctx.source is not None:
        labels = md.get("labels")
        if not isinstance(labels, dict):
            labels = md["labels"] = {}
        labels[keys.SOURCE] = ctx.source
    return po._replace(doc=orjson.dumps(obj, option=_SORTED), resolved=True)


def _hook(md: dict[str, Any]) -> bool:
    ann = md.get("annotations")
    return isinstance(ann, dict) and is_hook(ann)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def parse_object(
    obj: Obj, *, line: int, index: int, ctx: ParseContext, registry: Registry
) -> ParsedObject:
    """One loaded object: prepared and admitted when `registry` knows its kind."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    md = obj.get("metadata")
    name = _text(md.get("name")) if isinstance(md, dict) else ""
    try:
        info = registry.info(GVK.from_api_version(api_version, kind))
    except NotFound:
        ns = _text(md.get("namespace")) if isinstance(md, dict) else ""
        return ParsedObject(orjson.dumps(obj), line, index, api_version, kind, name, ns, False)
    except GitkrmError as e:
        return ParsedObject(b"{}", line, index, api_version, kind, name, "", True, (e.message,))
    p = prepare(obj, info=info, ctx=ctx, registry=registry)
    return ParsedObject(
        p.doc, line, index, api_version, kind, name, p.namespace, True, p.problems, p.warnings
    )


def parse_file(path: str, data: bytes, *, ctx: ParseContext, registry: Registry) -> ParsedFile:
    """Every object of one file; a file that can't be read is one FileError."""
    bad = content_problem(data)
    if bad is not None:
        return ParsedFile(error=bad)
    try:
        manifests = load_manifests(data, path=path, max_bytes=ctx.max_bytes)
    except ManifestError as e:
        return ParsedFile(error=FileError(e.line, e.object, e.detail))
    objects = tuple(
        parse_object(obj, line=m.line, index=m.index, ctx=ctx, registry=registry)
        for m in manifests
        if (obj := argo_reading(m.obj) if ctx.argo_cd else m.obj) is not None
    )
    return ParsedFile(objects, None, any(not po.resolved for po in objects), postbuild_text(data))


_REGISTRY: Registry | None = None


def builtin_registry() -> Registry:
    """This process's registry of built-in kinds (what cached parses are admitted against)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = Registry.builtin()
    return _REGISTRY


def parse_chunk(ctx: ParseContext, items: Sequence[tuple[str, bytes]]) -> list[ParsedFile]:
    """Parse many files against the built-in kinds (the unit of work of a worker process)."""
    reg = builtin_registry()
    return [parse_file(path, data, ctx=ctx, registry=reg) for path, data in items]
