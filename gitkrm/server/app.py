"""The ASGI application: routing of Kubernetes REST paths to the handlers.

Everything runs on the event loop's thread, like the store: handlers never block (SQLite
calls are short and synchronous, bodies and watch streams are awaited).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from gitkrm import __version__
from gitkrm.errors import GitkrmError, InternalError, MethodNotAllowed
from gitkrm.schema import RELEASE
from gitkrm.server import collection, objects, subresources
from gitkrm.server.auth import PUBLIC_PATHS, TokenAuth
from gitkrm.server.context import Limits, ServerContext
from gitkrm.server.discovery import DISCOVERY_CONTENT_TYPE
from gitkrm.server.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from gitkrm.server.metrics import Metrics
from gitkrm.server.negotiation import discovery_version
from gitkrm.server.openapi_v2 import PROTOBUF as V2_PROTOBUF
from gitkrm.server.paths import Target, not_found, parse_target
from gitkrm.server.responses import error_response, json_response, object_response, with_details
from gitkrm.store.sqlite import SqliteStore
from gitkrm.store.sqlite.stats import object_counts

log = logging.getLogger(__name__)

Handler = Callable[[ServerContext, Request, Target], Awaitable[Response]]

_HEALTH: Final = frozenset({"healthz", "livez", "readyz"})
_WATCH_VALUES: Final = frozenset({"1", "true", "True", "t", "T", "TRUE"})
_NOT_ALLOWED: Final = "the server does not allow this method on the requested resource"

# (subresource, method) -> (verb the kind must allow, metrics verb, handler)
_OBJECT: Final[dict[tuple[str | None, str], tuple[str, str, Handler]]] = {
    (None, "GET"): ("get", "GET", objects.get),
    (None, "PUT"): ("update", "PUT", objects.update),
    (None, "PATCH"): ("patch", "PATCH", objects.patch),
    (None, "DELETE"): ("delete", "DELETE", objects.delete),
    ("status", "GET"): ("get", "GET", objects.get),
    ("status", "PUT"): ("update", "PUT", subresources.update_status),
    ("status", "PATCH"): ("patch", "PATCH", objects.patch),
    ("scale", "GET"): ("get", "GET", subresources.get_scale),
    ("scale", "PUT"): ("update", "PUT", subresources.update_scale),
    ("scale", "PATCH"): ("patch", "PATCH", subresources.patch_scale),
    ("finalize", "PUT"): ("update", "PUT", subresources.finalize),
}


@dataclass(slots=True)
class _Labels:
    verb: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""


def version_info() -> dict[str, str]:
    major, minor = RELEASE.split(".")
    return {
        "major": major,
        "minor": minor,
        "gitVersion": f"v{RELEASE}.0+gitkrm.{__version__}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "python",
        "compiler": "gitkrm",
        "platform": "linux/amd64",
    }


class ApiServer:
    """The Kubernetes-compatible HTTP API of one SqliteStore, as an ASGI app."""

    def __init__(
        self,
        store: SqliteStore,
        *,
        token: str | None = None,
        limits: Limits | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.metrics = metrics or Metrics(lambda: object_counts(store))
        self.ctx = ServerContext(store, metrics=self.metrics, limits=limits or Limits())
        self.auth = TokenAuth(token) if token else None

    def begin_shutdown(self) -> None:
        """End watch streams (call on the loop's thread)."""
        self.ctx.closing.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        start = time.perf_counter()
        request = Request(scope, receive)
        labels = _Labels(verb=scope["method"])
        try:
            if self.auth is not None and scope["path"].rstrip("/") not in PUBLIC_PATHS:
                self.auth.check(_header(scope, b"authorization"))
            response = await self._route(request, labels)
        except GitkrmError as e:
            response = error_response(e)
        except Exception as e:
            log.exception("internal error serving %s %s", scope["method"], scope["path"])
            response = error_response(InternalError(f"Internal error occurred: {e}"))
        await response(scope, receive, send)
        self.metrics.observe(
            verb=labels.verb,
            group=labels.group,
            resource=labels.resource,
            subresource=labels.subresource,
            code=response.status_code,
            seconds=time.perf_counter() - start,
        )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.begin_shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _route(self, request: Request, labels: _Labels) -> Response:
        segs = [s for s in request.scope["path"].split("/") if s]
        path = "/" + "/".join(segs)  # `/version/` is `/version`
        head = segs[0] if segs else ""
        method = request.method
        if head == "api" and len(segs) >= 3 and segs[1] == "v1":
            target = parse_target(self.ctx.registry, group="", version="v1", segments=segs[2:])
            return await self._resource(request, target, labels)
        if head == "apis" and len(segs) >= 4:
            target = parse_target(
                self.ctx.registry, group=segs[1], version=segs[2], segments=segs[3:]
            )
            return await self._resource(request, target, labels)
        if method != "GET":
            raise MethodNotAllowed(_NOT_ALLOWED)
        if head in ("api", "apis"):
            return self._discovery(request, segs)
        if head == "openapi":
            return self._openapi(request, segs)
        if path == "/version":
            return object_response(version_info())
        if head in _HEALTH:
            if head == "readyz" and self.ctx.closing.is_set():
                return PlainTextResponse("shutting down", status_code=503)
            return PlainTextResponse("ok")
        if path == "/metrics":
            return Response(self.metrics.render(), media_type=METRICS_CONTENT_TYPE)
        raise not_found()

    def _discovery(self, request: Request, segs: list[str]) -> Response:
        d = self.ctx.discovery
        accept = request.headers.get("accept")
        if segs == ["api"] or segs == ["apis"]:
            v = discovery_version(accept)
            if v is not None:
                body = d.aggregated(core=segs[0] == "api", version=v)
                resp = json_response(body, content_type=DISCOVERY_CONTENT_TYPE.format(v=v))
                resp.headers["vary"] = "Accept"
                return resp
            if segs[0] == "api":
                host = request.headers.get("host") or ""
                return json_response(d.api_versions(host))
            return json_response(d.group_list())
        if segs == ["api", "v1"]:
            return json_response(d.resource_list("", "v1"))
        if segs[0] == "apis" and len(segs) == 2:
            return json_response(d.group(segs[1]))
        if segs[0] == "apis" and len(segs) == 3:
            return json_response(d.resource_list(segs[1], segs[2]))
        raise not_found()

    def _openapi(self, request: Request, segs: list[str]) -> Response:
        if segs == ["openapi", "v2"]:
            return self._openapi_v2(request)
        if len(segs) < 2 or segs[1] != "v3":
            raise not_found()
        o = self.ctx.openapi
        if len(segs) == 2:
            return json_response(o.root())
        body, h = o.document("/".join(segs[2:]))
        resp = json_response(body)
        resp.headers["etag"] = f'"{h}"'
        if request.query_params.get("hash") == h:
            resp.headers["cache-control"] = "public, immutable"
        else:
            resp.headers["cache-control"] = "no-cache, private"
        return resp

    def _openapi_v2(self, request: Request) -> Response:
        v2 = self.ctx.openapi_v2
        if "protobuf" not in (request.headers.get("accept") or ""):
            return json_response(v2.json_document())
        body, etag = v2.document()
        if request.headers.get("if-none-match") == f'"{etag}"':
            return Response(status_code=304, headers={"etag": f'"{etag}"'})
        resp = Response(body, media_type=V2_PROTOBUF)
        resp.headers["etag"] = f'"{etag}"'
        return resp

    async def _resource(self, request: Request, target: Target, labels: _Labels) -> Response:
        info = target.info
        method = request.method
        labels.group = info.group
        labels.resource = info.plural
        labels.subresource = target.subresource or ""
        if target.name is None:
            handler, needs, verb = self._collection_handler(request, target)
        else:
            entry = _OBJECT.get((target.subresource, method))
            if entry is None:
                raise MethodNotAllowed(_NOT_ALLOWED)
            needs, verb, handler = entry
            if verb == "PATCH" and "apply-patch" in (request.headers.get("content-type") or ""):
                verb = "APPLY"
        labels.verb = verb
        if needs not in info.verbs:
            raise MethodNotAllowed(_NOT_ALLOWED)
        try:
            return await handler(self.ctx, request, target)
        except GitkrmError as e:
            if target.name is not None:
                with_details(e, name=target.name, group=info.group, resource=info.plural)
            raise

    @staticmethod
    def _collection_handler(request: Request, target: Target) -> tuple[Handler, str, str]:
        method = request.method
        if method == "GET":
            watch = target.watch_path or request.query_params.get("watch") in _WATCH_VALUES
            if watch:
                return collection.list_or_watch, "watch", "WATCH"
            return collection.list_or_watch, "list", "LIST"
        if method == "POST":
            return collection.create, "create", "POST"
        if method == "DELETE":
            return collection.delete_collection, "deletecollection", "DELETECOLLECTION"
        raise MethodNotAllowed(_NOT_ALLOWED)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for k, v in scope["headers"]:
        if k == name:
            return bytes(v)
    return None
