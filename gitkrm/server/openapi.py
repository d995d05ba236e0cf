"""`/openapi/v3` and its per group-version documents.

With these kubectl (1.27 and later) finds that every PATCH takes `fieldValidation`, so it
leaves validation to the server instead of validating against `/openapi/v2`, and
`kubectl explain` renders the schemas. Documents are built on first use and cached; a
group-version's hash changes when its kinds (or a CRD's schema) change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Final

import orjson

from gitkrm.errors import NotFound
from gitkrm.krm import GVK
from gitkrm.schema import RELEASE, Registry, ResourceInfo
from gitkrm.schema.openapi import definition_name
from gitkrm.server.openapi_schema import (
    LIST_META,
    META_TYPES,
    OBJECT_META,
    REF_PREFIX,
    SCALE,
    builtin_schemas,
    custom_schema_name,
    custom_schemas,
)

_DELETE_OPTIONS: Final = REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
_STATUS: Final = REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
_PATCH: Final = REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
_PATCH_TYPES: Final = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
_CUSTOM_PATCH_TYPES: Final = _PATCH_TYPES[:3]


def _q(name: str, description: str, typ: str = "string") -> dict[str, object]:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": typ, "uniqueItems": True},
    }


_DRY_RUN = _q("dryRun", "When present, indicates that modifications should not be persisted.")
_FIELD_MANAGER = _q(
    "fieldManager", "fieldManager is a name associated with the actor making these changes."
)
_FIELD_VALIDATION = _q(
    "fieldValidation",
    "fieldValidation instructs the server on how to handle objects in the request containing "
    "unknown or duplicate fields. Valid values are: Ignore, Warn (the default) and Strict.",
)
_FORCE = _q("force", 'Force is going to "force" Apply requests.', "boolean")
_WRITE: Final = (_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION)
_LIST: Final = (
    _q(
        "allowWatchBookmarks",
        'allowWatchBookmarks requests watch events with type "BOOKMARK".',
        "boolean",
    ),
    _q(
        "continue",
        "The continue option should be set when retrieving more results from the server.",
    ),
    _q("fieldSelector", "A selector to restrict the list of returned objects by their fields."),
    _q("labelSelector", "A selector to restrict the list of returned objects by their labels."),
    _q("limit", "limit is a maximum number of responses to return for a list call.", "integer"),
    _q(
        "resourceVersion",
        "resourceVersion sets a constraint on what resource versions a request may be served from.",
    ),
    _q(
        "resourceVersionMatch",
        "resourceVersionMatch determines how resourceVersion is applied to list calls.",
    ),
    _q(
        "sendInitialEvents",
        "`sendInitialEvents=true` may be set together with `watch=true`.",
        "boolean",
    ),
    _q("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
    _q("watch", "Watch for changes to the described resources.", "boolean"),
)
_DELETE: Final = (
    _DRY_RUN,
    _q(
        "gracePeriodSeconds",
        "The duration in seconds before the object should be deleted.",
        "integer",
    ),
    _q("orphanDependents", "Deprecated: please use the PropagationPolicy.", "boolean"),
    _q("propagationPolicy", "Whether and how garbage collection will be performed."),
)
_PRETTY = _q("pretty", "If 'true', then the output is pretty printed.")


def _path_param(name: str, description: str) -> dict[str, object]:
    return {
        "name": name,
        "in": "path",
        "description": description,
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }


_NAME = _path_param("name", "name of the resource")
_NAMESPACE = _path_param("namespace", "object name and auth scope, such as for teams and projects")


def _content(
    ref: str, types: tuple[str, ...] = ("application/json", "application/yaml")
) -> dict[str, object]:
    return {t: {"schema": {"$ref": ref}} for t in types}


def _camel(text: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in text.replace("-", ".").split(".") if p)


class _Kind:
    """Names an info's schemas and operations in a document."""

    def __init__(self, info: ResourceInfo) -> None:
        self.info = info
        gvk = info.gvk
        if info.custom:
            self.obj = custom_schema_name(info.group, info.version, info.kind)
            self.list = custom_schema_name(info.group, info.version, info.list_kind)
        else:
            self.obj = definition_name(gvk) or ""
            lst = GVK(group=info.group, version=info.version, kind=info.list_kind)
            self.list = definition_name(lst) or ""
        self.ext = {"group": info.group, "version": info.version, "kind": info.kind}
        group = info.group.removesuffix(".k8s.io") if info.group else "core"
        self.op_prefix = _camel(group) + _camel(info.version)

    def op(
        self,
        action: str,
        verb: str,
        *,
        params: tuple[Mapping[str, object], ...],
        namespaced: bool,
        response: str,
        body: Mapping[str, object] | None = None,
        suffix: str = "",
        all_namespaces: bool = False,
    ) -> dict[str, object]:
        scope = "Namespaced" if namespaced else ""
        kind = self.info.kind + suffix
        op_id = f"{verb}{self.op_prefix}{scope}{kind}"
        if all_namespaces:
            op_id += "ForAllNamespaces"
        out: dict[str, object] = {
            "tags": [self.op_prefix],
            "description": f"{verb} {self.info.kind}",
            "operationId": op_id,
            "parameters": list(params),
            "responses": {
                "200": {"description": "OK", "content": _content(response)},
                "401": {"description": "Unauthorized"},
            },
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": self.ext,
        }
        if body is not None:
            out["requestBody"] = body
        return out


_SUBRESOURCE_VERBS: Final = frozenset({"get", "update", "patch"})


def _read_write_ops(
    k: _Kind,
    verbs: AbstractSet[str],
    *,
    ref: str,
    body: Mapping[str, object],
    patch_body: Mapping[str, object] | None = None,
    suffix: str = "",
) -> dict[str, object]:
    """The get, put and patch operations (those of `verbs`) on an object or on one of its
    subresources (`suffix`: its name), whose schema is `ref`."""
    ns = k.info.namespaced
    item: dict[str, object] = {}
    if "get" in verbs:
        item["get"] = k.op("get", "read", params=(), namespaced=ns, response=ref, suffix=suffix)
    if "update" in verbs:
        item["put"] = k.op(
            "put", "replace", params=_WRITE, namespaced=ns, response=ref, body=body, suffix=suffix
        )
    if "patch" in verbs:
        item["patch"] = k.op(
            "patch",
            "patch",
            params=(*_WRITE, _FORCE),
            namespaced=ns,
            response=ref,
            body=patch_body,
            suffix=suffix,
        )
    return item


def _paths_of(info: ResourceInfo, base: str) -> dict[str, object]:
    k = _Kind(info)
    verbs = set(info.verbs)
    ns = info.namespaced
    coll = f"{base}/namespaces/{{namespace}}/{info.plural}" if ns else f"{base}/{info.plural}"
    scope_params = [_NAMESPACE] if ns else []
    obj_ref = REF_PREFIX + k.obj
    list_ref = REF_PREFIX + k.list
    body = {"content": _content(obj_ref, ("*/*",)), "required": True}
    # kubectl apply computes a strategic merge patch only where the PATCH operation lists
    # its content type, so custom kinds (which take none) must not list it.
    patch_types = _PATCH_TYPES if not info.custom else _CUSTOM_PATCH_TYPES
    patch_body = {
        "content": {t: {"schema": {"$ref": _PATCH}} for t in patch_types},
        "required": True,
    }
    delete_body = {"content": {"*/*": {"schema": {"$ref": _DELETE_OPTIONS}}}}
    paths: dict[str, object] = {}
    item: dict[str, object] = {}
    if "list" in verbs:
        item["get"] = k.op("list", "list", params=_LIST, namespaced=ns, response=list_ref)
    if "create" in verbs:
        item["post"] = k.op(
            "post", "create", params=_WRITE, namespaced=ns, response=obj_ref, body=body
        )
    if "deletecollection" in verbs:
        item["delete"] = k.op(
            "deletecollection",
            "deleteCollection",
            params=_DELETE + _LIST,
            namespaced=ns,
            response=_STATUS,
            body=delete_body,
        )
    if item:
        item["parameters"] = [*scope_params, _PRETTY]
        paths[coll] = item
    if ns and "list" in verbs:
        paths[f"{base}/{info.plural}"] = {
            "get": k.op(
                "list",
                "list",
                params=_LIST,
                namespaced=False,
                response=list_ref,
                all_namespaces=True,
            ),
            "parameters": [_PRETTY],
        }
    item = _read_write_ops(k, verbs, ref=obj_ref, body=body, patch_body=patch_body)
    if "delete" in verbs:
        item["delete"] = k.op(
            "delete", "delete", params=_DELETE, namespaced=ns, response=_STATUS, body=delete_body
        )
    if item:
        item["parameters"] = [_NAME, *scope_params, _PRETTY]
        paths[f"{coll}/{{name}}"] = item
    for sub in sorted(info.subresources & {"status", "scale"}):
        ref = REF_PREFIX + SCALE if sub == "scale" else obj_ref
        sub_body = {"content": _content(ref, ("*/*",)), "required": True}
        item = _read_write_ops(
            k, _SUBRESOURCE_VERBS, ref=ref, body=sub_body, patch_body=patch_body, suffix=_camel(sub)
        )
        item["parameters"] = [_NAME, *scope_params, _PRETTY]
        paths[f"{coll}/{{name}}/{sub}"] = item
    if "finalize" in info.subresources:
        item = _read_write_ops(k, {"update"}, ref=obj_ref, body=body, suffix="Finalize")
        item["parameters"] = [_NAME, *scope_params, _PRETTY]
        paths[f"{coll}/{{name}}/finalize"] = item
    return paths


def gv_path(group: str, version: str) -> str:
    """`api/v1` or `apis/<group>/<version>`: a document's key in `/openapi/v3`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


class OpenAPIv3:
    """The documents of one registry (built-in documents are shared by every server)."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._keys: dict[str, tuple[object, ...]] = {}
        self._hashes: dict[str, str] = {}
        self._docs: dict[str, bytes] = {}

    def _group_versions(self) -> dict[str, list[ResourceInfo]]:
        out: dict[str, list[ResourceInfo]] = {}
        for info in self._registry.infos():
            out.setdefault(gv_path(info.group, info.version), []).append(info)
        return out

    def _refresh(self, path: str, infos: list[ResourceInfo]) -> str:
        infos = sorted(infos, key=lambda i: i.plural)
        schemas = [self._registry.custom_schema(i.gvk) if i.custom else None for i in infos]
        key = (*infos, *(id(s) for s in schemas))
        if self._keys.get(path) != key:
            h = hashlib.sha512(f"{RELEASE}|{path}|{infos!r}".encode())
            for s in schemas:
                if s is not None:
                    h.update(orjson.dumps(s, option=orjson.OPT_SORT_KEYS))
            self._keys[path] = key
            self._hashes[path] = h.hexdigest()[:64].upper()
            self._docs.pop(path, None)
        return self._hashes[path]

    def root(self) -> bytes:
        paths: dict[str, object] = {}
        for path, infos in sorted(self._group_versions().items()):
            h = self._refresh(path, infos)
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={h}"}
        return orjson.dumps({"paths": paths})

    def document(self, path: str) -> tuple[bytes, str]:
        """The document of `api/v1` or `apis/<g>/<v>`, and its hash."""
        infos = self._group_versions().get(path)
        if infos is None:
            raise NotFound(f"the server could not find the OpenAPI document {path}")
        h = self._refresh(path, infos)
        doc = self._docs.get(path)
        if doc is None:
            doc = orjson.dumps(self._build(path, infos))
            self._docs[path] = doc
        return doc, h

    def _build(self, path: str, infos: list[ResourceInfo]) -> dict[str, object]:
        paths: dict[str, object] = {}
        names: list[str] = list(META_TYPES)
        custom: dict[str, object] = {}
        for info in sorted(infos, key=lambda i: i.plural):
            paths.update(_paths_of(info, "/" + path))
            if "scale" in info.subresources:
                names.append(SCALE)
            schema = self._registry.custom_schema(info.gvk) if info.custom else None
            if schema is not None:
                custom.update(custom_schemas(info, schema))
                names.append(OBJECT_META)
                names.append(LIST_META)
            else:
                k = _Kind(info)
                names.extend(n for n in (k.obj, k.list) if n)
        schemas = builtin_schemas(names)
        schemas.update(custom)
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": f"v{RELEASE}.0"},
            "paths": paths,
            "components": {"schemas": schemas},
        }
