"""Responses: JSON bodies, `kind: Status` errors and successes, `Warning:` headers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

import orjson
from starlette.responses import Response

from gitkrm.errors import AlreadyExists, Conflict, GitkrmError, NotFound
from gitkrm.krm.types import Status, StatusDetails

JSON: Final = "application/json"


def json_response(
    body: bytes,
    *,
    status: int = 200,
    warnings: Sequence[str] = (),
    content_type: str = JSON,
) -> Response:
    resp = Response(body, status_code=status, media_type=content_type)
    if warnings:
        resp.raw_headers.extend(warning_headers(warnings))
    return resp


def object_response(obj: object, *, status: int = 200, warnings: Sequence[str] = ()) -> Response:
    return json_response(orjson.dumps(obj), status=status, warnings=warnings)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def warning_headers(warnings: Iterable[str]) -> list[tuple[bytes, bytes]]:
    """RFC 7234 `Warning: 299 - "<text>"` headers, as kube-apiserver sends them (kubectl
    prints each as `Warning: <text>`)."""
    out = []
    seen: set[str] = set()
    for w in warnings:
        if w in seen:
            continue
        seen.add(w)
        text = w.replace("\n", " ").replace("\r", " ")
        out.append((b"warning", ("299 - " + _quote(text)).encode("utf-8", "replace")))
    return out


def error_response(err: GitkrmError, *, warnings: Sequence[str] = ()) -> Response:
    """A `kind: Status` failure with Content-Type exactly application/json."""
    return json_response(orjson.dumps(err.to_status()), status=err.code, warnings=warnings)


def with_details(err: GitkrmError, *, name: str, group: str, resource: str) -> GitkrmError:
    """Fill in `details` as kube-apiserver does for errors about one object (the `kind` of
    a NotFound/AlreadyExists/Conflict is the resource name)."""
    d = err.details
    if isinstance(err, NotFound | AlreadyExists | Conflict) and not d.kind and not d.name:
        d.name = name
        d.group = group
        d.kind = resource
    return err


def success_status(*, name: str, group: str, resource: str, uid: str | None) -> bytes:
    """The Status a delete answers when the object is gone at once."""
    details: StatusDetails = {"name": name, "group": group, "kind": resource}
    if uid:
        details["uid"] = uid
    body: Status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }
    return orjson.dumps(body)
