"""Object paths: GET, PUT (update), PATCH and DELETE of one object."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol, Unpack

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gitkrm.errors import BadRequest, NotFound
from gitkrm.krm import FieldValidation, Obj
from gitkrm.server.bodies import check_object, decode_apply, decode_body, decode_json
from gitkrm.server.context import ServerContext, include_object
from gitkrm.server.limits import read_body
from gitkrm.server.negotiation import Output, body_format, negotiate_object, patch_type
from gitkrm.server.params import (
    WriteParams,
    cached_write_params,
    check_patch_options,
    delete_params,
)
from gitkrm.server.paths import Target
from gitkrm.server.protobuf import MAGIC, decode_delete_options
from gitkrm.server.responses import json_response, object_response, success_status
from gitkrm.server.tables import table
from gitkrm.store import PatchType
from gitkrm.store.protocol import WriteKeywords


async def body_of(ctx: ServerContext, request: Request) -> bytes:
    return await read_body(request, limit=ctx.limits.body_bytes, within=ctx.limits.body_timeout)


async def respond_read(ctx: ServerContext, request: Request, target: Target, obj: Obj) -> Response:
    """A read answer: the object, or a one-row Table when kubectl asks for one."""
    neg = negotiate_object(request.headers.get("accept"))
    if neg.output is Output.TABLE:
        printer = await ctx.tables.printer(target.info)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        t = table(
            printer,
            [obj],
            list_metadata={"resourceVersion": rv} if rv else {},
            include_object=include_object(request),
            table_version=neg.table_version,
        )
        return object_response(t)
    return object_response(obj)


async def get(ctx: ServerContext, request: Request, target: Target) -> Response:
    negotiate_object(request.headers.get("accept"))
    obj = await ctx.store.get(target.ref)
    return await respond_read(ctx, request, target, obj)


async def decoded_object(
    ctx: ServerContext, request: Request, target: Target, validation: FieldValidation
) -> tuple[Obj, list[str]]:
    """The request body as an object checked against the URL, and decoding warnings."""
    fmt = body_format(request.headers.get("content-type"))
    body = await body_of(ctx, request)
    value, warnings = decode_body(body, fmt, validation=validation, info=target.info)
    obj = check_object(value, info=target.info, name=target.name, namespace=target.namespace)
    return obj, warnings


def params_of(request: Request, kind: str) -> WriteParams:
    """The write parameters of a request (its User-Agent names the default manager)."""
    return cached_write_params(
        request.scope["query_string"], kind=kind, user_agent=request.headers.get("user-agent")
    )


class ObjectWrite(Protocol):
    """A store write of a whole object (`store.create`, `update`, `update_status`)."""

    def __call__(
        self, obj: Obj, /, *, warnings: list[str] | None = ..., **options: Unpack[WriteKeywords]
    ) -> Awaitable[Obj]: ...


async def write_object(
    ctx: ServerContext,
    request: Request,
    target: Target,
    write: ObjectWrite,
    *,
    options: str = "UpdateOptions",
    status: int = 200,
) -> Response:
    """The object a request carries, written by `write` with the request's parameters
    (`options`: the kind of its options, CreateOptions or UpdateOptions)."""
    wp = params_of(request, options)
    obj, warnings = await decoded_object(ctx, request, target, wp.field_validation)
    out = await write(
        obj,
        dry_run=wp.dry_run,
        field_manager=wp.manager,
        field_validation=wp.field_validation,
        warnings=warnings,
    )
    return object_response(out, status=status, warnings=warnings)


async def update(ctx: ServerContext, request: Request, target: Target) -> Response:
    return await write_object(ctx, request, target, ctx.store.update)


async def decoded_patch(
    ctx: ServerContext, request: Request, validation: FieldValidation
) -> tuple[PatchType, Any, list[str]]:
    """The patch type and body of a PATCH request (an apply patch is YAML or JSON)."""
    pt = patch_type(request.headers.get("content-type"))
    body = await body_of(ctx, request)
    if pt == "apply":
        value, warnings = decode_apply(body, validation=validation)
        return pt, value, warnings
    value, dups = decode_json(body, validation=validation)
    if pt == "json" and not isinstance(value, list):
        raise BadRequest("a JSON patch must be a list of operations")
    if pt != "json" and not isinstance(value, dict):
        raise BadRequest(f"a {pt} merge patch must be a JSON object")
    warnings = [f'duplicate field "{d}"' for d in dups]
    if dups and validation is FieldValidation.STRICT:
        raise BadRequest(f"strict decoding error: {', '.join(warnings)}")
    return pt, value, warnings


async def patch(ctx: ServerContext, request: Request, target: Target) -> Response:
    wp = params_of(request, "PatchOptions")
    check_patch_options(wp, apply=patch_type(request.headers.get("content-type")) == "apply")
    pt, body, warnings = await decoded_patch(ctx, request, wp.field_validation)
    apply = pt == "apply"
    created = apply and target.subresource is None and not await _exists(ctx, target)
    out = await ctx.store.patch(
        target.ref,
        body,
        pt,
        dry_run=wp.dry_run,
        field_manager=wp.field_manager if apply else wp.manager,
        force=wp.force,
        field_validation=wp.field_validation,
        warnings=warnings,
        subresource=target.subresource,
    )
    return object_response(out, status=201 if created else 200, warnings=warnings)


async def _exists(ctx: ServerContext, target: Target) -> bool:
    """Whether the object is there (an apply that creates it answers 201, as kube's patch
    handler does). The store works on the loop's thread, so nothing writes in between."""
    try:
        await ctx.store.get(target.ref)
    except NotFound:
        return False
    return True


async def delete_options_body(ctx: ServerContext, request: Request) -> dict[str, Any] | None:
    body = await body_of(ctx, request)
    if not body.strip():
        return None
    if body.startswith(MAGIC):
        return decode_delete_options(body)
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise BadRequest(f"the DeleteOptions body is not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise BadRequest("the DeleteOptions body must be a JSON object")
    return value


def still_exists(obj: Obj) -> bool:
    """A delete that only marked the object (finalizers still hold it)."""
    md = obj.get("metadata") or {}
    if md.get("finalizers"):
        return True
    spec = obj.get("spec")
    return (
        obj.get("kind") == "Namespace" and isinstance(spec, dict) and bool(spec.get("finalizers"))
    )


async def delete(ctx: ServerContext, request: Request, target: Target) -> Response:
    dp = delete_params(request.query_params, await delete_options_body(ctx, request))
    out = await ctx.store.delete(
        target.ref,
        propagation=dp.propagation,
        preconditions=dp.preconditions,
        dry_run=dp.dry_run,
    )
    if still_exists(out):
        status = 202 if dp.orphan_dependents is False else 200
        return object_response(out, status=status)
    md = out.get("metadata") or {}
    return json_response(
        success_status(
            name=str(md.get("name") or target.name),
            group=target.info.group,
            resource=target.info.plural,
            uid=md.get("uid"),
        )
    )
