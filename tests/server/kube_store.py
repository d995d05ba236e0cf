"""A `Store` over HTTP through the official kubernetes Python client, for the Store
contract suite: what `kube://` will do, until the cluster-target issue brings it."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any, TypedDict, Unpack

import orjson
from kubernetes import config as _config

from gitkrm.errors import GitkrmError, InternalError, from_status
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.store import (
    BatchOp,
    BatchOpKind,
    EventType,
    PatchType,
    Preconditions,
    Propagation,
    WatchEvent,
    WriteOptions,
)
from gitkrm.store.protocol import ListKeywords, WatchKeywords, WriteKeywords, list_query

config: Any = _config

_PATCH_CONTENT = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


class _Request(TypedDict, total=False):
    """What a request carries beyond its method and path (JSON unless `content_type`)."""

    query: Sequence[tuple[str, Any]]
    body: Any
    content_type: str


class KubeClientStore:
    """The Store protocol spoken to a Kubernetes API with `kubernetes.client.ApiClient`."""

    def __init__(self, kubeconfig: str) -> None:
        self._api = config.new_client_from_config(config_file=kubeconfig)
        self._resources: dict[tuple[str, str, str], tuple[str, bool]] = {}

    @property
    def registry(self) -> None:
        """The server admits with its own schemas."""
        return None

    # -- plumbing ----------------------------------------------------------------------------

    def _send(self, method: str, path: str, **request: Unpack[_Request]) -> Any:
        content_type = request.get("content_type", "application/json")
        m, url, headers, data, _ = self._api.param_serialize(
            method,
            path,
            query_params=list(request.get("query", ())),
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=request.get("body"),
            auth_settings=["BearerToken"],
        )
        return self._api.call_api(m, url, header_params=headers, body=data)

    def _call(self, method: str, path: str, **request: Unpack[_Request]) -> Any:
        """`_send`, the body decoded; an error status raised as gitkrm's error."""
        resp = self._send(method, path, **request)
        data = resp.read()
        if resp.status >= 400:
            try:
                status = orjson.loads(data)
            except orjson.JSONDecodeError:
                raise InternalError(f"HTTP {resp.status}: {data!r}") from None
            raise from_status(status, http_code=resp.status)
        return orjson.loads(data)

    def _resource(self, group: str, version: str, kind: str) -> tuple[str, bool]:
        key = (group, version, kind)
        if key not in self._resources:
            base = f"/apis/{group}/{version}" if group else f"/api/{version}"
            for r in self._call("GET", base)["resources"]:
                if "/" not in r["name"]:
                    self._resources[(group, version, r["kind"])] = (r["name"], r["namespaced"])
        if key not in self._resources:
            raise GitkrmError(f"no resource for {kind} in {group}/{version}")
        return self._resources[key]

    def _version(self, group: str, kind: str, version: str | None) -> str:
        if version:
            return version
        base = f"/apis/{group}" if group else "/api"
        if group:
            return str(self._call("GET", base)["preferredVersion"]["version"])
        return "v1"

    def _path(
        self, group: str, version: str, kind: str, namespace: str | None, name: str | None = None
    ) -> str:
        plural, namespaced = self._resource(group, version, kind)
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        if namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{plural}"
        return f"{base}/{name}" if name else base

    def _ref_path(self, ref: ObjectRef, sub: str | None = None) -> str:
        version = self._version(ref.group, ref.kind, ref.version)
        path = self._path(ref.group, version, ref.kind, ref.namespace or "default", ref.name)
        return f"{path}/{sub}" if sub else path

    def _obj_path(self, obj: Obj, *, name: bool) -> str:
        gvk = GVK.of(obj)
        md = obj.get("metadata") or {}
        return self._path(
            gvk.group,
            gvk.version,
            gvk.kind,
            md.get("namespace") or "default",
            md.get("name") if name else None,
        )

    @staticmethod
    def _write_query(opts: WriteOptions) -> list[tuple[str, Any]]:
        q: list[tuple[str, Any]] = [("fieldValidation", str(opts.field_validation))]
        if opts.dry_run:
            q.append(("dryRun", "All"))
        if opts.field_manager:
            q.append(("fieldManager", opts.field_manager))
        return q

    async def _write(
        self,
        method: str,
        path: str,
        body: Any,
        options: WriteKeywords,
        *,
        content_type: str = "application/json",
    ) -> Obj:
        q = self._write_query(WriteOptions.of(**options))
        out: Obj = await self._run(
            self._call, method, path, query=q, body=body, content_type=content_type
        )
        return out

    async def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    # -- the Store protocol ------------------------------------------------------------------

    async def get(self, ref: ObjectRef) -> Obj:
        out: Obj = await self._run(self._call, "GET", self._ref_path(ref))
        return out

    async def list(
        self, gvk: GVK, namespace: str | None = None, **options: Unpack[ListKeywords]
    ) -> Obj:
        q = [(k, v) for k, v in list_query(options).items() if v is not None]
        path = self._path(gvk.group, gvk.version, gvk.kind, namespace)
        out: Obj = await self._run(self._call, "GET", path, query=q)
        return out

    async def create(self, obj: Obj, **options: Unpack[WriteKeywords]) -> Obj:
        return await self._write("POST", self._obj_path(obj, name=False), obj, options)

    async def update(self, obj: Obj, **options: Unpack[WriteKeywords]) -> Obj:
        return await self._write("PUT", self._obj_path(obj, name=True), obj, options)

    async def update_status(self, obj: Obj, **options: Unpack[WriteKeywords]) -> Obj:
        path = self._obj_path(obj, name=True) + "/status"
        return await self._write("PUT", path, obj, options)

    async def patch(
        self, ref: ObjectRef, patch: Any, patch_type: PatchType, **options: Unpack[WriteKeywords]
    ) -> Obj:
        content_type = _PATCH_CONTENT[patch_type]
        return await self._write(
            "PATCH", self._ref_path(ref), patch, options, content_type=content_type
        )

    async def delete(
        self,
        ref: ObjectRef,
        *,
        propagation: Propagation | str | None = None,
        preconditions: Preconditions | None = None,
        dry_run: bool = False,
    ) -> Obj:
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation is not None:
            body["propagationPolicy"] = str(Propagation(propagation))
        if preconditions is not None:
            body["preconditions"] = {
                k: v
                for k, v in (
                    ("uid", preconditions.uid),
                    ("resourceVersion", preconditions.resource_version),
                )
                if v is not None
            }
        if dry_run:
            body["dryRun"] = ["All"]
        out: Obj = await self._run(self._call, "DELETE", self._ref_path(ref), body=body)
        return out

    async def watch(
        self,
        gvk: GVK,
        namespace: str | None = None,
        resource_version: str | None = None,
        **options: Unpack[WatchKeywords],
    ) -> AsyncIterator[WatchEvent]:
        q: list[tuple[str, Any]] = [("watch", "true")]
        for k, v in (
            ("resourceVersion", resource_version),
            ("labelSelector", options.get("label_selector")),
            ("fieldSelector", options.get("field_selector")),
        ):
            if v is not None:
                q.append((k, v))
        if options.get("allow_bookmarks"):
            q.append(("allowWatchBookmarks", "true"))
        path = await self._run(self._path, gvk.group, gvk.version, gvk.kind, namespace)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()
        stop = threading.Event()
        holder: list[Any] = []

        def hand(item: bytes | BaseException | None) -> None:
            with contextlib.suppress(RuntimeError):  # the consumer's loop is gone
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def pump() -> None:
            try:
                resp = self._send("GET", path, query=q)
                holder.append(resp.response)
                if resp.status >= 400:
                    raise from_status(orjson.loads(resp.read()), http_code=resp.status)
                for chunk in resp.response.stream(amt=None, decode_content=False):
                    if stop.is_set():
                        break
                    hand(chunk)
                resp.response.release_conn()
            except BaseException as e:  # handed to the consumer
                if not stop.is_set():
                    hand(e)
            hand(None)

        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        pending = b""
        try:
            while True:
                item = await queue.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                pending += item
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    if not line.strip():
                        continue
                    ev = orjson.loads(line)
                    if ev["type"] == "ERROR":
                        raise from_status(ev["object"])
                    yield WatchEvent(type=EventType(ev["type"]), obj=ev["object"], raw=line + b"\n")
        finally:
            stop.set()
            for r in holder:
                with contextlib.suppress(Exception):
                    r.shutdown()

    async def batch(
        self, ops: Sequence[BatchOp], **options: Unpack[WriteKeywords]
    ) -> builtins.list[Obj]:
        """One request per op (the HTTP API has no transactions)."""
        write = WriteOptions.of(**options)
        out: builtins.list[Obj] = []
        for op in ops:
            opts: dict[str, Any] = {"dry_run": write.dry_run}
            if op.op is BatchOpKind.DELETE:
                assert op.ref is not None
                out.append(
                    await self.delete(
                        op.ref, propagation=op.propagation, preconditions=op.preconditions, **opts
                    )
                )
                continue
            opts.update(field_manager=write.field_manager, field_validation=write.field_validation)
            if op.op is BatchOpKind.PATCH:
                assert op.ref is not None
                apply_force = write.force and op.patch_type == "apply"
                out.append(
                    await self.patch(op.ref, op.patch, op.patch_type, force=apply_force, **opts)
                )
            elif op.op is BatchOpKind.CREATE:
                assert op.obj is not None
                out.append(await self.create(op.obj, **opts))
            elif op.op is BatchOpKind.UPDATE:
                assert op.obj is not None
                out.append(await self.update(op.obj, **opts))
            else:
                assert op.obj is not None
                out.append(await self.update_status(op.obj, **opts))
        return out

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self._api.close()
