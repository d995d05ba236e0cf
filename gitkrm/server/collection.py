"""Collection paths: LIST (and WATCH), POST (create) and DELETE (deletecollection)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gitkrm.errors import MethodNotAllowed
from gitkrm.krm import ObjectRef
from gitkrm.server import reviews
from gitkrm.server.context import ServerContext, include_object
from gitkrm.server.negotiation import Output, negotiate_object
from gitkrm.server.objects import delete_options_body, write_object
from gitkrm.server.params import delete_params, list_params
from gitkrm.server.paths import Target
from gitkrm.server.responses import json_response, object_response
from gitkrm.server.tables import table
from gitkrm.server.watch import WatchResponse, check_params
from gitkrm.store import BatchOp, BatchOpKind
from gitkrm.store.protocol import ListKeywords

_EXACT_ALL = 1 << 62  # a limit no list reaches: makes the store serve the exact revision


def require_namespace(target: Target) -> None:
    """Creates and deletecollections of namespaced kinds need a namespace in the path."""
    if target.info.namespaced and target.namespace is None:
        raise MethodNotAllowed("the server does not allow this method on the requested resource")


async def list_or_watch(ctx: ServerContext, request: Request, target: Target) -> Response:
    lp = list_params(request.query_params, watch_path=target.watch_path)
    neg = negotiate_object(request.headers.get("accept"))
    info = target.info
    if lp.watch:
        check_params(lp)
        printer = await ctx.tables.printer(info) if neg.output is Output.TABLE else None
        return WatchResponse(
            ctx,
            gvk=info.gvk,
            namespace=target.namespace,
            params=lp,
            negotiated=neg,
            printer=printer,
            include_object=include_object(request),
        )
    limit = lp.limit
    if lp.resource_version_match == "Exact" and not limit:
        limit = _EXACT_ALL
    args: ListKeywords = {
        "label_selector": lp.label_selector,
        "field_selector": lp.field_selector,
        "limit": limit,
        "continue_": lp.continue_,
        "resource_version": lp.resource_version,
    }
    if neg.output is Output.TABLE:
        include = include_object(request)
        printer = await ctx.tables.printer(info)
        result = await ctx.store.list(info.gvk, target.namespace, **args)
        t = table(
            printer,
            result["items"],
            list_metadata=result["metadata"],
            include_object=include,
            table_version=neg.table_version,
        )
        return object_response(t)
    body = await ctx.store.list_raw(info.gvk, target.namespace, **args)
    return json_response(body)


async def create(ctx: ServerContext, request: Request, target: Target) -> Response:
    require_namespace(target)
    if target.info.group in reviews.GROUPS:
        return await reviews.create(ctx, request, target)
    return await write_object(
        ctx, request, target, ctx.store.create, options="CreateOptions", status=201
    )


async def delete_collection(ctx: ServerContext, request: Request, target: Target) -> Response:
    require_namespace(target)
    info = target.info
    dp = delete_params(request.query_params, await delete_options_body(ctx, request))
    lp = list_params(request.query_params)
    found = await ctx.store.list(
        info.gvk,
        namespace=target.namespace,
        label_selector=lp.label_selector,
        field_selector=lp.field_selector,
    )
    ops = []
    for item in found["items"]:
        md = item["metadata"]
        ref = ObjectRef(
            group=info.group,
            kind=info.kind,
            name=md["name"],
            namespace=md.get("namespace"),
            version=info.version,
        )
        ops.append(
            BatchOp(
                op=BatchOpKind.DELETE,
                ref=ref,
                propagation=dp.propagation,
                preconditions=dp.preconditions,
            )
        )
    deleted = await ctx.store.batch(ops, dry_run=dp.dry_run) if ops else []
    return object_response(
        {
            "apiVersion": info.gvk.api_version,
            "kind": info.list_kind,
            "metadata": {"resourceVersion": str(ctx.store.resource_version)},
            "items": deleted,
        }
    )
