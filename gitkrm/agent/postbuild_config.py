"""The GitSource fields of Flux's post-build steps, and the flags of a single source.

`spec.substitute` (a map), `spec.substituteFrom` (ConfigMaps and Secrets of the store, in
`gitkrm-system` unless a namespace is given, each maybe `optional`), `spec.substituteStrict`
and `spec.decryption` (`provider: sops`, `secretRef`), read into a `PostBuildSpec` and
written back; `--substitute KEY=VALUE`, `--substitute-strict` and `--sops-age-key-file`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gitkrm.errors import BadRequest
from gitkrm.sync.postbuild_spec import DecryptionSpec, PostBuildSpec, RefKind, SubstituteRef

NAMESPACE = "gitkrm-system"
_STR: dict[str, Any] = {"type": "string"}

SCHEMA: dict[str, Any] = {
    "substitute": {"type": "object", "additionalProperties": _STR},
    "substituteFrom": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["kind", "name"],
            "properties": {
                "kind": {"type": "string", "enum": [str(k) for k in RefKind]},
                "name": {"type": "string", "minLength": 1},
                "namespace": _STR,
                "optional": {"type": "boolean"},
            },
        },
    },
    "substituteStrict": {"type": "boolean"},
    "substituteStrategy": {"type": "string", "enum": ["WithVariables", "Always"]},
    "decryption": {
        "type": "object",
        "required": ["provider"],
        "properties": {
            "provider": {"type": "string", "enum": ["sops"]},
            "secretRef": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": _STR, "namespace": _STR},
            },
            "keyFiles": {"type": "array", "items": _STR},
        },
    },
}


def from_spec(spec: Mapping[str, Any], *, base: Path) -> PostBuildSpec | None:
    """The post-build settings of a (schema-checked) GitSource spec; None when none."""
    substitute = tuple((str(k), str(v)) for k, v in (spec.get("substitute") or {}).items())
    refs = tuple(
        SubstituteRef(
            kind=RefKind(r["kind"]),
            name=r["name"],
            namespace=r.get("namespace") or NAMESPACE,
            optional=bool(r.get("optional")),
        )
        for r in spec.get("substituteFrom") or ()
    )
    decryption = None
    dec = spec.get("decryption")
    if dec:
        ref = dec.get("secretRef") or {}
        decryption = DecryptionSpec(
            secret_name=ref.get("name") or None,
            secret_namespace=ref.get("namespace") or NAMESPACE,
            key_files=tuple(str((base / f).resolve()) for f in dec.get("keyFiles") or ()),
        )
    out = PostBuildSpec(
        substitute=substitute,
        substitute_from=refs,
        strict=bool(spec.get("substituteStrict")),
        decryption=decryption,
        always=spec.get("substituteStrategy") == "Always",
    )
    return None if out.empty and not out.strict else out


def to_spec(pb: PostBuildSpec | None) -> dict[str, Any]:
    """The GitSource spec fields of `pb`."""
    if pb is None:
        return {}
    out: dict[str, Any] = {}
    if pb.substitute:
        out["substitute"] = dict(pb.substitute)
    if pb.substitute_from:
        out["substituteFrom"] = [
            {"kind": str(r.kind), "name": r.name, "namespace": r.namespace, "optional": r.optional}
            for r in pb.substitute_from
        ]
    if pb.strict:
        out["substituteStrict"] = True
    if pb.always:
        out["substituteStrategy"] = "Always"
    dec = pb.decryption
    if dec is not None:
        d: dict[str, Any] = {"provider": "sops"}
        if dec.secret_name:
            d["secretRef"] = {"name": dec.secret_name, "namespace": dec.secret_namespace}
        if dec.key_files:
            d["keyFiles"] = list(dec.key_files)
        out["decryption"] = d
    return out


def parse_substitute(pairs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`--substitute KEY=VALUE` flags (the last of a key wins)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadRequest(f"--substitute {pair!r}: expected KEY=VALUE")
        out[key] = value
    return tuple(out.items())


def from_flags(
    *, substitute: Sequence[str], strict: bool, key_files: Sequence[Path]
) -> PostBuildSpec | None:
    """The post-build settings the flags of a single source give."""
    decryption = None
    if key_files:
        for f in key_files:
            if not f.is_file():
                raise BadRequest(f"--sops-age-key-file {f}: no such file")
        decryption = DecryptionSpec(key_files=tuple(str(f.resolve()) for f in key_files))
    out = PostBuildSpec(
        substitute=parse_substitute(substitute), strict=strict, decryption=decryption
    )
    return None if out.empty and not out.strict else out


def with_key_files(pb: PostBuildSpec | None, key_files: Sequence[Path]) -> PostBuildSpec | None:
    """`--sops-age-key-file` given with `--config`: the agent's keys for every source that
    decrypts."""
    if pb is None or pb.decryption is None or not key_files:
        return pb
    from dataclasses import replace

    files = pb.decryption.key_files + tuple(str(f.resolve()) for f in key_files)
    return replace(pb, decryption=replace(pb.decryption, key_files=files))
