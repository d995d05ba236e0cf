"""Request bodies: JSON (with the duplicate-field check of fieldValidation) or YAML, and
the object checks kube-apiserver makes against the URL (kind, apiVersion, name, namespace)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

from gitkrm.errors import BadRequest, ManifestError
from gitkrm.krm import FieldValidation, Obj, load_manifests
from gitkrm.krm.nesting import MAX_NESTING, nesting_exceeds
from gitkrm.schema import ResourceInfo
from gitkrm.server.negotiation import BodyFormat
from gitkrm.server.protobuf import decode_object


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class _Duplicates:
    """object_pairs_hook that remembers keys given twice in one JSON object."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            seen: set[str] = set()
            for k, _ in pairs:
                if k in seen and k not in self.found:
                    self.found.append(k)
                seen.add(k)
        return out


def _shallow(value: Any) -> Any:
    """`value`, unless it nests deeper than gitkrm stores (see gitkrm.krm.nesting)."""
    if nesting_exceeds(value):
        raise BadRequest(f"the request body is nested too deeply (more than {MAX_NESTING} levels)")
    return value


def decode_json(body: bytes, *, validation: FieldValidation) -> tuple[Any, list[str]]:
    """The decoded body and its duplicate keys (looked for unless validation is Ignore)."""
    if not body.strip():
        raise BadRequest("the request body is empty")
    if validation is FieldValidation.IGNORE:
        try:
            return _shallow(orjson.loads(body)), []
        except orjson.JSONDecodeError as e:
            raise BadRequest(f"the request body is not valid JSON: {e}") from None
    try:
        value = _shallow(orjson.loads(body))
    except orjson.JSONDecodeError:
        pass  # the stdlib reader below gives the error (or reads what orjson does not)
    else:
        # A body that is exactly orjson's own encoding of what it decodes to has no key
        # twice (the encoding of a dict names each key once): the common case of clients
        # that send compact JSON (gitkrm's own, aiohttp with orjson) skips the slow reader.
        if orjson.dumps(value) == body:
            return value, []
    hook = _Duplicates()
    try:
        value = json.loads(body, object_pairs_hook=hook, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        raise BadRequest(f"the request body is not valid JSON: {e}") from None
    return _shallow(value), hook.found


def decode_yaml(body: bytes) -> Any:
    try:
        docs = load_manifests(body, path="request body")
    except ManifestError as e:
        raise BadRequest(e.message) from None
    if len(docs) != 1:
        raise BadRequest(f"the request body must hold one object, found {len(docs)}")
    return docs[0].obj


def decode_apply(body: bytes, *, validation: FieldValidation) -> tuple[Any, list[str]]:
    """An apply patch (application/apply-patch+yaml): YAML (C loader), or JSON, which kubectl
    sends. Duplicate JSON fields fail under Strict and warn under Warn, as the API server's
    yaml.UnmarshalStrict of the patch; in YAML they always fail."""
    head = body.lstrip()[:1]
    if head in (b"{", b"["):
        value, dups = decode_json(body, validation=validation)
        listed = [f'duplicate field "{d}"' for d in dups]
    else:
        if not head:
            raise BadRequest("the request body is empty")
        try:
            docs = load_manifests(body, path="apply patch", max_bytes=len(body) + 1)
        except ManifestError as e:
            # Duplicate keys are refused whatever fieldValidation says (the YAML reader
            # keeps no "last one wins" mode).
            raise BadRequest(f"error decoding YAML: {e.message}") from None
        if len(docs) != 1:
            raise BadRequest(f"an apply patch must hold one object, found {len(docs)}")
        value, listed = docs[0].obj, []
    if not isinstance(value, dict):
        raise BadRequest(
            f"error decoding YAML: an apply patch must be an object, got {type(value).__name__}"
        )
    if listed and validation is FieldValidation.STRICT:
        raise BadRequest(f"error strict decoding YAML: {', '.join(listed)}")
    return value, listed


def decode_body(
    body: bytes, fmt: BodyFormat, *, validation: FieldValidation, info: ResourceInfo
) -> tuple[Any, list[str]]:
    """Decode a create/update body; duplicates are an error under Strict, warnings under
    Warn (kube's wording)."""
    if fmt is BodyFormat.YAML:
        return decode_yaml(body), []
    if fmt is BodyFormat.PROTOBUF:
        return decode_object(body), []
    value, dups = decode_json(body, validation=validation)
    if not dups:
        return value, []
    listed = [f'duplicate field "{d}"' for d in dups]
    if validation is FieldValidation.STRICT:
        raise BadRequest(
            f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
            f"strict decoding error: {', '.join(listed)}"
        )
    return value, listed


def _default_or_match(
    into: dict[str, Any], key: str, expected: str, mismatch: Callable[[object], str]
) -> None:
    """kube-apiserver's rule for a field the URL gives too: missing or empty, the body takes
    the URL's value; another value is refused (`mismatch` words it, given the body's)."""
    got = into.get(key)
    if got in (None, ""):
        into[key] = expected
    elif got != expected:
        raise BadRequest(mismatch(got))


def check_object(obj: Any, *, info: ResourceInfo, name: str | None, namespace: str | None) -> Obj:
    """Fill in apiVersion, kind and namespace from the URL when missing, refuse mismatches."""
    if not isinstance(obj, dict):
        raise BadRequest(f"the request body must be a JSON object, got {type(obj).__name__}")
    api_version = info.gvk.api_version
    _default_or_match(
        obj,
        "apiVersion",
        api_version,
        lambda got: (
            f"the API version in the data ({got}) does not match the expected API "
            f"version ({api_version})"
        ),
    )
    _default_or_match(
        obj,
        "kind",
        info.kind,
        lambda got: f"the kind in the data ({got}) does not match the expected kind ({info.kind})",
    )
    md = obj.get("metadata")
    if md is None:
        md = obj["metadata"] = {}
    elif not isinstance(md, dict):
        raise BadRequest("metadata must be an object")
    if name is not None:
        _default_or_match(
            md,
            "name",
            name,
            lambda got: (
                f"the name of the object ({got}) does not match the name on the URL ({name})"
            ),
        )
    if info.namespaced and namespace is not None:
        _default_or_match(
            md,
            "namespace",
            namespace,
            lambda _: (
                "the namespace of the provided object does not match the namespace sent "
                "on the request"
            ),
        )
    return obj
