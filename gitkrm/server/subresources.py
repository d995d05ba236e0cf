"""The `status`, `scale` (autoscaling/v1 Scale) and Namespace `finalize` subresources."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from gitkrm.errors import BadRequest, Cause, Invalid, UnsupportedMediaType
from gitkrm.krm import FieldValidation, Obj, label_selector_from_set
from gitkrm.krm.types import JSONObject
from gitkrm.patch import apply_json_patch, apply_merge_patch
from gitkrm.server import objects
from gitkrm.server.bodies import decode_json
from gitkrm.server.context import ServerContext
from gitkrm.server.crds import crd_version
from gitkrm.server.jsonpath import find
from gitkrm.server.paths import Target
from gitkrm.server.printing import selector_string
from gitkrm.server.responses import object_response

_IGNORE = FieldValidation.IGNORE

# -- status -----------------------------------------------------------------------------


async def update_status(ctx: ServerContext, request: Request, target: Target) -> Response:
    return await objects.write_object(ctx, request, target, ctx.store.update_status)


# -- finalize ---------------------------------------------------------------------------


async def finalize(ctx: ServerContext, request: Request, target: Target) -> Response:
    wp = objects.params_of(request, "UpdateOptions")
    obj, _ = await objects.decoded_object(ctx, request, target, wp.field_validation)
    out = await ctx.store.finalize_namespace(obj, dry_run=wp.dry_run, field_manager=wp.manager)
    return object_response(out)


# -- scale ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScalePaths:
    spec: tuple[str, ...]
    status: str
    selector: str | None  # JSONPath of a custom kind's selector string
    builtin: bool


_BUILTIN_SCALE = ScalePaths(("spec", "replicas"), ".status.replicas", None, True)


def _simple_path(path: str) -> tuple[str, ...]:
    parts = tuple(p for p in path.strip().removeprefix(".").split("."))
    if not path.startswith(".") or not all(parts) or any("[" in p for p in parts):
        raise BadRequest(f"unsupported scale path {path!r}")
    return parts


async def scale_paths(ctx: ServerContext, target: Target) -> ScalePaths:
    if not target.info.custom:
        return _BUILTIN_SCALE
    _, version = await crd_version(ctx.store, target.info)
    scale = (version.get("subresources") or {}).get("scale") or {}
    return ScalePaths(
        _simple_path(str(scale.get("specReplicasPath") or ".spec.replicas")),
        str(scale.get("statusReplicasPath") or ".status.replicas"),
        scale.get("labelSelectorPath"),
        False,
    )


def _int(values: list[object]) -> int:
    v = values[0] if values else 0
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def scale_of(obj: Obj, paths: ScalePaths) -> Obj:
    md = obj.get("metadata") or {}
    spec_val: object = obj
    for p in paths.spec:
        spec_val = spec_val.get(p) if isinstance(spec_val, Mapping) else None
    status: dict[str, int | str] = {"replicas": _int(find(obj, paths.status))}
    if paths.builtin:
        sel = (obj.get("spec") or {}).get("selector")
        if obj.get("kind") == "ReplicationController":
            status["selector"] = str(label_selector_from_set(sel or {}))
        else:
            status["selector"] = selector_string(sel)
    elif paths.selector:
        found = find(obj, paths.selector)
        if found and isinstance(found[0], str):
            status["selector"] = found[0]
    meta = {
        k: md[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in md
    }
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": spec_val if isinstance(spec_val, int) else 0},
        "status": status,
    }


async def get_scale(ctx: ServerContext, request: Request, target: Target) -> Response:
    obj = await ctx.store.get(target.ref)
    return object_response(scale_of(obj, await scale_paths(ctx, target)))


def _checked_scale(value: object, target: Target) -> tuple[int, str | None]:
    """The replicas and resourceVersion precondition of a Scale body."""
    if not isinstance(value, dict):
        raise BadRequest("the request body must be a Scale object")
    if value.get("kind") not in (None, "", "Scale"):
        raise BadRequest(f"the kind in the data ({value.get('kind')}) must be Scale")
    md = value.get("metadata") or {}
    if md.get("name") not in (None, "", target.name):
        raise BadRequest(
            f"the name of the object ({md.get('name')}) does not match the name on the URL "
            f"({target.name})"
        )
    replicas = (value.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise Invalid.for_object(
            kind="Scale",
            group="autoscaling",
            name=target.name or "",
            causes=[
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {replicas!r}: must be greater than or equal to 0",
                    "spec.replicas",
                )
            ],
        )
    rv = md.get("resourceVersion")
    return replicas, str(rv) if rv else None


async def _write_scale(
    ctx: ServerContext, request: Request, target: Target, value: object, paths: ScalePaths
) -> Response:
    wp = objects.params_of(request, "UpdateOptions")
    replicas, rv = _checked_scale(value, target)
    patch: JSONObject = {paths.spec[-1]: replicas}
    for p in reversed(paths.spec[:-1]):
        patch = {p: patch}
    if rv is not None:
        patch["metadata"] = {"resourceVersion": rv}
    out = await ctx.store.patch(
        target.ref,
        patch,
        "merge",
        dry_run=wp.dry_run,
        field_manager=wp.manager,
        field_validation=wp.field_validation,
        subresource="scale",  # the manager's Update entry says `subresource: scale`
    )
    return object_response(scale_of(out, paths))


async def update_scale(ctx: ServerContext, request: Request, target: Target) -> Response:
    paths = await scale_paths(ctx, target)
    value, _ = decode_json(await objects.body_of(ctx, request), validation=_IGNORE)
    return await _write_scale(ctx, request, target, value, paths)


async def patch_scale(ctx: ServerContext, request: Request, target: Target) -> Response:
    paths = await scale_paths(ctx, target)
    pt, body, _ = await objects.decoded_patch(ctx, request, _IGNORE)
    if pt == "apply":
        raise UnsupportedMediaType(
            "server-side apply of the scale subresource is not supported: apply the object "
            "(or patch scale with a merge or JSON patch)"
        )
    current = scale_of(await ctx.store.get(target.ref), paths)
    if pt == "json":
        patched = apply_json_patch(current, body)
    else:  # merge, or strategic (a Scale has no lists: the same result)
        patched = apply_merge_patch(current, body)
    return await _write_scale(ctx, request, target, patched, paths)
