"""Content negotiation: what a client accepts (JSON, Table, aggregated discovery) and what
a request body is (JSON, YAML, which patch type)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from gitkrm.errors import GitkrmError, UnsupportedMediaType
from gitkrm.store import PatchType


class NotAcceptable(GitkrmError):
    reason = "NotAcceptable"
    code = 406


@dataclass(frozen=True, slots=True)
class MediaRange:
    type: str  # `application/json`, `*/*`, ...
    params: dict[str, str]


def parse_accept(header: str | None) -> list[MediaRange]:
    """Media ranges in the order the client lists them (kube clients list preferred first)."""
    if not header:
        return []
    out = []
    for part in header.split(","):
        fields = part.strip().split(";")
        mtype = fields[0].strip().lower()
        if not mtype:
            continue
        params: dict[str, str] = {}
        for f in fields[1:]:
            k, _, v = f.partition("=")
            params[k.strip().lower()] = v.strip().strip('"')
        out.append(MediaRange(type=mtype, params=params))
    return out


def _json_like(mtype: str) -> bool:
    return mtype in ("application/json", "application/*", "*/*")


class Output(StrEnum):
    OBJECT = "object"
    TABLE = "table"


@dataclass(frozen=True, slots=True)
class Negotiated:
    output: Output
    table_version: str = "v1"  # meta.k8s.io version of a Table


_OBJECT: Final = Negotiated(Output.OBJECT)


def negotiate_object(header: str | None) -> Negotiated:
    """What to answer a read with; remembered per Accept header (clients send the same one
    on every request; long headers are parsed each time)."""
    if header is not None and len(header) > 256:
        return _negotiate_object(header)
    return _negotiate_cached(header)


def _negotiate_object(header: str | None) -> Negotiated:
    """Table (`application/json;as=Table;g=meta.k8s.io;v=v1|v1beta1`) or plain JSON.

    Protobuf and other representations are not served: a client that lists JSON too gets
    JSON; one that accepts nothing we serve gets 406.
    """
    ranges = parse_accept(header)
    if not ranges:
        return _OBJECT
    for r in ranges:
        if not _json_like(r.type) and r.type != "application/yaml":
            continue
        want = r.params.get("as")
        if want is None:
            return _OBJECT
        if (
            want == "Table"
            and r.params.get("g") == "meta.k8s.io"
            and r.params.get("v") in ("v1", "v1beta1")
        ):
            return Negotiated(Output.TABLE, table_version=r.params["v"])
    raise NotAcceptable(
        f"only the following media types are accepted: application/json, "
        f"application/json;as=Table;v=v1;g=meta.k8s.io (asked for {header})"
    )


_negotiate_cached = functools.lru_cache(maxsize=128)(_negotiate_object)

DISCOVERY_GROUP: Final = "apidiscovery.k8s.io"


def discovery_version(header: str | None) -> str | None:
    """`v2` or `v2beta1` when the client asks for aggregated discovery first, else None."""
    for r in parse_accept(header):
        if r.params.get("as") == "APIGroupDiscoveryList":
            if r.params.get("g") == DISCOVERY_GROUP and r.params.get("v") in ("v2", "v2beta1"):
                return r.params["v"]
            continue
        if _json_like(r.type):
            return None
    return None


_PATCH_TYPES: Final[dict[str, PatchType]] = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}  # application/apply-patch+cbor (a feature-gated alpha of 1.32) is answered with 415

_PATCH_ACCEPTED: Final = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, "
    "application/apply-patch+yaml, application/strategic-merge-patch+json"
)


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def patch_type(content_type: str | None) -> PatchType:
    pt = _PATCH_TYPES.get(media_type(content_type))
    if pt is None:
        raise UnsupportedMediaType(_PATCH_ACCEPTED)
    return pt


class BodyFormat(StrEnum):
    JSON = "json"
    YAML = "yaml"
    PROTOBUF = "protobuf"


def body_format(content_type: str | None) -> BodyFormat:
    """The format of a create/update body (JSON when the client names none)."""
    mt = media_type(content_type)
    if mt in ("", "application/json", "*/*"):
        return BodyFormat.JSON
    if mt in ("application/yaml", "application/x-yaml", "text/yaml"):
        return BodyFormat.YAML
    if mt == "application/vnd.kubernetes.protobuf":
        return BodyFormat.PROTOBUF
    raise UnsupportedMediaType(
        "the body of the request was in an unknown format - accepted media types include: "
        f'application/json, application/yaml, application/vnd.kubernetes.protobuf (got "{mt}")'
    )
