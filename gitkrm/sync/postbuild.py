"""Flux's post-build steps on rendered files: SOPS decryption, then variable substitution.

A source may ask for both (GitSource `spec.substitute`, `spec.substituteFrom`,
`spec.substituteStrict`, `spec.decryption`; `PostBuildSpec`). Before a render the engine
resolves them against the store (`postbuild_inputs`) into a `PostBuild`: the variables,
the age identities and a digest of both. The renderer hands every parsed file to a
`Transformer` after rendering and before validation; as Flux does per resource, each
YAML document of a file that holds `$` or a SOPS mark is decrypted when it carries SOPS
metadata, then substituted unless the object says
`kustomize.toolkit.fluxcd.io/substitute: disabled`, then parsed and admitted again.

Substitution runs only when at least one variable is defined (Flux's `WithVariables`
strategy), or always with `spec.substituteStrategy: Always`; strict mode makes an unset
variable an error. A bad expression is a problem naming the file, the line and the
object. Results are cached by file content and the
digest, so a changed variable re-renders only the files that use variables, and a file
without `$` or `sops` is never looked at.

Variable values are secrets when a Secret holds them; decrypted values always are: both
are registered with `krm.masking` before they reach an object.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
import yaml

from gitkrm.errors import ManifestError
from gitkrm.krm.yamlio import load_manifests
from gitkrm.sync.cache import GenerationCache
from gitkrm.sync.envsubst import SubstitutionError, substitute
from gitkrm.sync.parse import (
    ParseContext,
    ParsedFile,
    ParsedObject,
    builtin_registry,
    parse_object,
)
from gitkrm.sync.postbuild_spec import DecryptionSpec, PostBuildSpec, RefKind, SubstituteRef
from gitkrm.sync.problems import Problem

__all__ = [
    "DecryptionSpec",
    "PostBuild",
    "PostBuildSpec",
    "RefKind",
    "SubstituteRef",
    "Transformer",
]

SUBSTITUTE_ANNOTATION: Final = "kustomize.toolkit.fluxcd.io/substitute"
DECRYPT_ANNOTATION: Final = "kustomize.toolkit.fluxcd.io/decrypt"
DISABLED: Final = "disabled"
VAR_NAME: Final = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")  # Flux's varsubRegex
_KEY: Final = os.urandom(32)  # digests of secret values mean nothing outside this process


@dataclass(frozen=True, slots=True)
class PostBuild:
    """The resolved inputs of one render. `digest` keys every cache of their results."""

    variables: Mapping[str, str] = field(default_factory=dict)
    strict: bool = False
    always: bool = False
    identities: tuple[str, ...] = ()
    decrypt: bool = False
    problems: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        h = hmac.new(_KEY, digestmod=hashlib.sha256)
        for k in sorted(self.variables):
            h.update(f"{k}\0{self.variables[k]}\0".encode())
        h.update(f"\1{self.strict}\1{self.decrypt}\1{self.always}\1".encode())
        for ident in self.identities:
            h.update(ident.encode() + b"\0")
        return h.hexdigest()[:32]

    @property
    def substitutes(self) -> bool:
        return self.always or bool(self.variables)

    @property
    def active(self) -> bool:
        return self.substitutes or self.decrypt


def clean_value(value: str) -> str:
    """Flux drops newlines from variable values."""
    return value.replace("\n", "")


def check_names(variables: Mapping[str, str], origin: Mapping[str, str]) -> list[str]:
    """Flux refuses every variable name outside `^[_[:alpha:]][_[:alpha:][:digit:]]*$`."""
    return [
        f"variable {name!r} from {origin.get(name, 'spec.substitute')} is not a valid name: "
        f"it must match {VAR_NAME.pattern}"
        for name in sorted(variables)
        if not VAR_NAME.match(name)
    ]


@dataclass(frozen=True, slots=True)
class _Segment:
    start: int  # character offset of the document in the file's text
    end: int
    line: int  # lines before it


def segments(text: str) -> list[_Segment]:
    """The YAML documents of a file, in the order (and with the indices) the loader
    counts them."""
    out: list[_Segment] = []
    start: Any = None
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        if isinstance(event, yaml.DocumentStartEvent):
            start = event.start_mark
        elif isinstance(event, yaml.DocumentEndEvent) and start is not None:
            end = event.start_mark
            assert end is not None
            out.append(_Segment(start.index, end.index, start.line))
    return out


def _has_secret(pf: ParsedFile) -> bool:
    return any(po.kind == "Secret" for po in pf.objects)


def _undecrypted(
    outputs: Sequence[tuple[str, str, ParsedFile]], problems: list[Problem]
) -> list[tuple[str, str, ParsedFile]]:
    """A source that does not decrypt: its SOPS-encrypted manifests are problems named by
    file and object (and left out, so their `ENC[...]` fields add no noise)."""
    out: list[tuple[str, str, ParsedFile]] = []
    for path, key, pf in outputs:
        text = pf.text
        if text is None or not ("mac: ENC[" in text or '"mac": "ENC[' in text):
            out.append((path, key, pf))
            continue
        try:
            docs = segments(text) if not path.endswith(".json") else [_Segment(0, len(text), 0)]
        except yaml.YAMLError:
            out.append((path, key, pf))
            continue
        encrypted = {
            i
            for i, seg in enumerate(docs)
            if "mac: ENC[" in text[seg.start : seg.end]
            or '"mac": "ENC[' in text[seg.start : seg.end]
        }
        kept: list[ParsedObject] = []
        for po in pf.objects:
            if po.document not in encrypted or _flag(po, DECRYPT_ANNOTATION):
                kept.append(po)
                continue
            encrypted.discard(po.document)  # one line per document
            problems.append(
                Problem(
                    path,
                    docs[po.document].line + 1 if po.line else None,
                    None,
                    "encrypted with SOPS, and the source does not decrypt: set "
                    "spec.decryption (provider: sops) or give --sops-age-key-file",
                )
            )
        if len(kept) == len(pf.objects):
            out.append((path, key, pf))
        else:
            new = ParsedFile(tuple(kept), None, any(not po.resolved for po in kept), text)
            out.append((path, f"{key}:undecrypted", new))
    return out


def _flag(po: ParsedObject, key: str) -> bool:
    """A label or annotation `key: disabled` on the object (Flux checks both)."""
    if key.encode() not in po.doc:
        return False
    md = orjson.loads(po.doc).get("metadata") or {}
    return any(
        isinstance(m, dict) and m.get(key) == DISABLED
        for m in (md.get("labels"), md.get("annotations"))
    )


Decrypt = Callable[[str, str, PostBuild, bool], str | None]
"""(document text, path, inputs, verify the MAC) -> the decrypted document as YAML text,
or None when it is not encrypted; raises ValueError naming what failed."""


def sops_document(doc: str, path: str, inputs: PostBuild, verify: bool) -> str | None:
    """A SOPS-encrypted manifest decrypted (as JSON text, which YAML reads as is); None
    when it is not encrypted. ValueError (SopsError) names what failed. `verify` False for
    kustomize output (its source file's MAC was checked before the build)."""
    if "mac" not in doc:
        return None
    from gitkrm.sync import sops  # only sources that decrypt load it

    obj = sops.decrypt_document(
        doc, json_text=path.endswith(".json"), keys=inputs.identities, verify=verify
    )
    if obj is None:
        return None
    return orjson.dumps(obj, default=_bytes_text).decode()


def _bytes_text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    raise TypeError(type(v).__name__)


class Transformer:
    """Applies a `PostBuild` to the parsed files of a render (see the module docstring)."""

    def __init__(self, *, context: ParseContext, decrypt: Decrypt | None = None) -> None:
        self.context = context
        self._decrypt = decrypt or sops_document
        self._done: GenerationCache[tuple[str, str, str], tuple[ParsedFile, tuple[Problem, ...]]]
        self._done = GenerationCache()

    def apply(
        self,
        outputs: Sequence[tuple[str, str, ParsedFile]],
        inputs: PostBuild,
        problems: list[Problem],
    ) -> list[tuple[str, str, ParsedFile]]:
        """`outputs` (path shown, content key, parsed file) after the post-build steps;
        a rewritten file gets a content key of its own. Problems are added to `problems`."""
        self._done.rotate()
        problems.extend(Problem("", None, None, p) for p in inputs.problems)
        if not inputs.decrypt:
            outputs = _undecrypted(outputs, problems)
        if not inputs.active or inputs.problems:
            return list(outputs)
        digest = inputs.digest
        out: list[tuple[str, str, ParsedFile]] = []
        for path, key, pf in outputs:
            if pf.error is not None or (
                pf.text is None and not (inputs.decrypt and _has_secret(pf))
            ):
                out.append((path, key, pf))
                continue
            ckey = (path, key, digest)
            hit = self._done.get(ckey)
            if hit is None:
                hit = self._file(path, pf, inputs)
                self._done.put(ckey, hit)
            new, found = hit
            problems.extend(found)
            out.append((path, key if new is pf else f"{key}:{digest}", new))
        return out

    def _file(
        self, path: str, pf: ParsedFile, inputs: PostBuild
    ) -> tuple[ParsedFile, tuple[Problem, ...]]:
        objects, changed = list(pf.objects), False
        problems: list[Problem] = []
        if pf.text is not None:
            objects, problems, changed = self._documents(path, pf, pf.text, inputs)
        if inputs.decrypt:
            kept: list[ParsedObject] = []
            for po in objects:
                new = self._secret_fields(path, po, inputs) if po.kind == "Secret" else None
                if isinstance(new, Problem):
                    problems.append(new)
                elif new is not None:
                    kept.append(new)
                else:
                    kept.append(po)
                changed = changed or new is not None
            objects = kept
        if not changed:
            return pf, ()
        deferred = any(not po.resolved for po in objects)
        return ParsedFile(tuple(objects), None, deferred, None), tuple(problems)

    def _documents(
        self, path: str, pf: ParsedFile, text: str, inputs: PostBuild
    ) -> tuple[list[ParsedObject], list[Problem], bool]:
        try:
            docs = segments(text) if not path.endswith(".json") else [_Segment(0, len(text), 0)]
        except yaml.YAMLError:
            return list(pf.objects), [], False  # the loader read it: nothing to do
        by_doc: dict[int, list[ParsedObject]] = {}
        for po in pf.objects:
            by_doc.setdefault(po.document, []).append(po)
        keep_lines = any(po.line for po in pf.objects)
        objects: list[ParsedObject] = []
        problems: list[Problem] = []
        changed = False
        for index, seg in enumerate(docs):
            originals = by_doc.get(index)
            if not originals:
                continue
            new = self._document(path, text[seg.start : seg.end], seg, index, originals, inputs)
            if isinstance(new, Problem):
                problems.append(new)
                changed = True
                continue
            if new is not originals:
                changed = True
                if not keep_lines:
                    new = [po._replace(line=0) for po in new]
            objects.extend(new)
        return objects, problems, changed

    def _secret_fields(
        self, path: str, po: ParsedObject, inputs: PostBuild
    ) -> ParsedObject | Problem | None:
        """A Secret whose data values are SOPS-encrypted files (Flux decrypts each into
        the format its key names); None when none is."""
        if b'"data"' not in po.doc or not po.resolved or _flag(po, DECRYPT_ANNOTATION):
            return None
        obj = orjson.loads(po.doc)
        data = obj.get("data")
        if not isinstance(data, dict):
            return None
        from gitkrm.sync import sops

        changed = False
        for k, v in data.items():
            try:
                raw = base64.b64decode(str(v), validate=True)
            except (binascii.Error, ValueError):
                continue
            fmt = sops.encrypted_format(raw)
            if fmt is None:
                continue
            try:
                plain = sops.decrypt_file(
                    raw, fmt=fmt, out=sops.format_for_path(k), keys=inputs.identities
                )
            except sops.SopsError as e:
                return Problem(
                    path, po.line or None, po.describe(), f"SOPS decryption of data.{k}: {e}"
                )
            data[k] = base64.b64encode(plain).decode()
            changed = True
        if not changed:
            return None
        registry = builtin_registry()
        return parse_object(
            obj, line=po.line, index=po.document, ctx=self.context, registry=registry
        )

    def _document(
        self,
        path: str,
        doc: str,
        seg: _Segment,
        index: int,
        originals: list[ParsedObject],
        inputs: PostBuild,
    ) -> list[ParsedObject] | Problem:
        first = originals[0]
        where = first.line if first.line else None
        what = first.describe()
        changed = False
        decrypt = inputs.decrypt and self._decrypt is not None and "sops" in doc
        if decrypt and not any(_flag(po, DECRYPT_ANNOTATION) for po in originals):
            assert self._decrypt is not None
            try:
                plain = self._decrypt(doc, path, inputs, bool(first.line))
            except ValueError as e:
                return Problem(path, where, what, f"SOPS decryption failed: {e}")
            if plain is not None:
                doc, changed = plain, True
        subst = inputs.substitutes and "$" in doc
        if subst and not any(_flag(po, SUBSTITUTE_ANNOTATION) for po in originals):
            try:
                new = substitute(doc, inputs.variables, strict=inputs.strict)
            except SubstitutionError as e:
                line = seg.line + e.line + 1 if where else None
                return Problem(path, line, what, f"variable substitution: {e.message}")
            changed = changed or new != doc
            doc = new
        if not changed:
            return originals
        try:
            manifests = load_manifests("\n" * seg.line + doc, path=path)
        except ManifestError as e:
            return Problem(path, e.line if where else None, what, f"after post-build: {e.detail}")
        registry = builtin_registry()
        return [
            parse_object(m.obj, line=m.line, index=index, ctx=self.context, registry=registry)
            for m in manifests
        ]
