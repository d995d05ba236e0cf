"""KubeStore: the Store protocol over a Kubernetes API (the cluster target, docs/architecture.md).

Each call is one REST request (a watch: a stream; a batch: many requests) through
`KubeClient`, which rate-limits, bounds and retries them. Kinds are mapped to resources by
the cached `Discovery`. Semantics are the API server's own: the same objects, revisions and
errors the embedded store gives, except that a batch is best-effort (see `batch`).
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final, Unpack

import orjson

from gitkrm.errors import BadRequest
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.store.kube.batch import run_batch
from gitkrm.store.kube.client import ClientOptions, KubeClient, encode_params
from gitkrm.store.kube.discovery import Discovery, Resource
from gitkrm.store.kube.kubeconfig import ClusterConfig, in_cluster_config, load_kubeconfig
from gitkrm.store.kube.watch import WatchRequest, initial_events, stream_events
from gitkrm.store.protocol import (
    BatchOp,
    BatchOpKind,
    DeleteKeywords,
    ListKeywords,
    PatchType,
    Propagation,
    WatchEvent,
    WatchKeywords,
    WriteKeywords,
    WriteOptions,
    list_query,
)

PATCH_CONTENT: Final = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",  # JSON is YAML: sent as JSON
}
CRD_GROUP: Final = "apiextensions.k8s.io"
WATCH_LIST_PAGE: Final = 1000


def _md(obj: Obj) -> dict[str, Any]:
    md = obj.get("metadata")
    if not isinstance(md, dict):
        raise BadRequest("object has no metadata")
    return md


def _name(obj: Obj) -> str:
    name = _md(obj).get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest(f"{obj.get('kind') or 'object'} has no metadata.name")
    return name


class KubeStore:
    """The Store protocol against one cluster (see the module docstring)."""

    @property
    def registry(self) -> None:
        """A cluster admits with its own schemas (Store.registry)."""
        return None

    def __init__(self, config: ClusterConfig, options: ClientOptions | None = None) -> None:
        self.config = config
        self.client = KubeClient(config, options)
        self.discovery = Discovery(self.client)

    @classmethod
    def from_kubeconfig(
        cls,
        kubeconfig: str | None = None,
        *,
        context: str | None = None,
        options: ClientOptions | None = None,
    ) -> KubeStore:
        """A kubeconfig context, or the pod's service account when `kubeconfig` is None."""
        if kubeconfig:
            config = load_kubeconfig(kubeconfig, context=context)
        else:
            if context:
                raise BadRequest("a context needs a kubeconfig (kube://?kubeconfig=PATH&context=)")
            config = in_cluster_config()
        return cls(config, options)

    # -- plumbing ------------------------------------------------------------------------

    async def _resource(self, group: str, version: str | None, kind: str) -> Resource:
        return await self.discovery.resource(group, version or None, kind)

    async def _of_obj(self, obj: Obj) -> Resource:
        gvk = GVK.of(obj)
        return await self._resource(gvk.group, gvk.version, gvk.kind)

    async def _of_ref(self, ref: ObjectRef) -> Resource:
        return await self._resource(ref.group, ref.version, ref.kind)

    @staticmethod
    def _write_params(opts: WriteOptions, *, force: bool = False) -> list[tuple[str, str]]:
        """The query of a write; `force` only where the verb takes it (apply patches)."""
        return encode_params(
            {
                "dryRun": "All" if opts.dry_run else None,
                "fieldManager": opts.field_manager,
                "force": force,
                "fieldValidation": str(opts.field_validation),
            }
        )

    async def _call(
        self,
        method: str,
        path: str,
        *,
        params: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> Obj:
        data = None if body is None else orjson.dumps(body)
        out: Obj = await self.client.request(
            method, path, params=params, body=data, content_type=content_type
        )
        return out

    def _wrote(self, res: Resource) -> None:
        if res.group == CRD_GROUP and res.kind == "CustomResourceDefinition":
            self.discovery.invalidate()  # its kind is served (or gone) soon

    async def server_version(self) -> str:
        """The API server's Kubernetes version (`/version`'s gitVersion, e.g. v1.33.2):
        what Helm charts see as `.Capabilities.KubeVersion`."""
        out = await self._call("GET", "/version")
        return str(out.get("gitVersion") or "")

    # -- reads ---------------------------------------------------------------------------

    async def get(self, ref: ObjectRef) -> Obj:
        res = await self._of_ref(ref)
        return await self._call("GET", res.path(ref.namespace, ref.name))

    async def list(
        self, gvk: GVK, namespace: str | None = None, **options: Unpack[ListKeywords]
    ) -> Obj:
        res = await self._resource(gvk.group, gvk.version, gvk.kind)
        params = encode_params(list_query(options))
        out = await self._call("GET", res.path(namespace), params=params)
        items = out.get("items")
        if items:
            api_version = GVK(group=res.group, version=res.version, kind=res.kind).api_version
            for item in items:  # the API server leaves them out of list items
                if "kind" not in item:
                    item["apiVersion"] = api_version
                    item["kind"] = res.kind
        return out

    # -- writes --------------------------------------------------------------------------

    async def _send(
        self,
        obj: Obj,
        method: str,
        opts: WriteOptions,
        *,
        sub: str = "",
    ) -> Obj:
        """A create (POST to the collection) or a replace (PUT to the object, or `sub`)."""
        res = await self._of_obj(obj)
        params = self._write_params(opts)
        ns = _md(obj).get("namespace")
        if method == "POST":
            path = res.path(ns or "default")
        else:
            path = res.path(ns, _name(obj)) + sub
        out = await self._call(method, path, params=params, body=obj)
        if not sub:
            self._wrote(res)
        return out

    async def create(self, obj: Obj, **options: Unpack[WriteKeywords]) -> Obj:
        return await self._send(obj, "POST", WriteOptions.of(**options))

    async def update(self, obj: Obj, **options: Unpack[WriteKeywords]) -> Obj:
        return await self._send(obj, "PUT", WriteOptions.of(**options))

    async def update_status(self, obj: Obj, **options: Unpack[WriteKeywords]) -> Obj:
        return await self._send(obj, "PUT", WriteOptions.of(**options), sub="/status")

    async def patch(
        self,
        ref: ObjectRef,
        patch: Any,
        patch_type: PatchType,
        **options: Unpack[WriteKeywords],
    ) -> Obj:
        content_type = PATCH_CONTENT.get(patch_type)
        if content_type is None:
            raise BadRequest(f"patch type {patch_type!r}: use json, merge, strategic or apply")
        opts = WriteOptions.of(**options)
        if opts.force and patch_type != "apply":
            raise BadRequest("force is only for apply patches (server-side apply)")
        res = await self._of_ref(ref)
        params = self._write_params(opts, force=opts.force)
        path = res.path(ref.namespace, ref.name)
        body = patch if not isinstance(patch, bytes | str) else None
        if body is None:  # already serialized
            raw = patch.encode() if isinstance(patch, str) else patch
            out: Obj = await self.client.request(
                "PATCH", path, params=params, body=raw, content_type=content_type
            )
        else:
            out = await self._call(
                "PATCH", path, params=params, body=body, content_type=content_type
            )
        self._wrote(res)
        return out

    async def delete(self, ref: ObjectRef, **options: Unpack[DeleteKeywords]) -> Obj:
        res = await self._of_ref(ref)
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        propagation = options.get("propagation")
        if propagation is not None:
            body["propagationPolicy"] = str(Propagation(propagation))
        preconditions = options.get("preconditions")
        if preconditions is not None:
            pre = {"uid": preconditions.uid, "resourceVersion": preconditions.resource_version}
            body["preconditions"] = {k: v for k, v in pre.items() if v is not None}
        if options.get("dry_run"):
            body["dryRun"] = ["All"]
        out = await self._call("DELETE", res.path(ref.namespace, ref.name), body=body)
        self._wrote(res)
        return out

    # -- watch ---------------------------------------------------------------------------

    async def watch(
        self,
        gvk: GVK,
        namespace: str | None = None,
        resource_version: str | None = None,
        **options: Unpack[WatchKeywords],
    ) -> AsyncIterator[WatchEvent]:
        """Events of a kind; without a revision (or "0"), the current objects first as
        ADDED. Resumes after dropped connections; `Expired` when the revision is gone."""
        res = await self._resource(gvk.group, gvk.version, gvk.kind)
        req = WatchRequest(
            path=res.path(namespace),
            api_version=GVK(group=res.group, version=res.version, kind=res.kind).api_version,
            kind=res.kind,
            label_selector=options.get("label_selector"),
            field_selector=options.get("field_selector"),
            allow_bookmarks=options.get("allow_bookmarks", False),
        )
        rv = resource_version
        if not rv or rv == "0":

            async def page(token: str | None) -> Obj:
                return await self.list(
                    GVK(group=res.group, version=res.version, kind=res.kind),
                    namespace=namespace,
                    label_selector=req.label_selector,
                    field_selector=req.field_selector,
                    limit=WATCH_LIST_PAGE,
                    continue_=token,
                )

            events, rv = await initial_events(req, page)
            for ev in events:
                yield ev
            del events
        async for ev in stream_events(self.client, req, rv):
            yield ev

    # -- batch and close -----------------------------------------------------------------

    async def batch(
        self, ops: Sequence[BatchOp], **options: Unpack[WriteKeywords]
    ) -> builtins.list[Obj]:
        """Best-effort, concurrent (see gitkrm.store.kube.batch): every op is tried, and
        the first failed op's error is raised after the others completed. `force` goes
        with the apply patches only (the API server refuses it on other writes)."""
        opts = WriteOptions.of(**options)
        keywords: WriteKeywords = {
            "dry_run": opts.dry_run,
            "field_manager": opts.field_manager,
            "field_validation": opts.field_validation,
        }

        async def run(op: BatchOp) -> Obj:
            if op.op is BatchOpKind.DELETE:
                assert op.ref is not None
                return await self.delete(
                    op.ref,
                    propagation=op.propagation,
                    preconditions=op.preconditions,
                    dry_run=opts.dry_run,
                )
            if op.op is BatchOpKind.PATCH:
                assert op.ref is not None
                applying = opts.force and op.patch_type == "apply"
                return await self.patch(
                    op.ref,
                    op.patch,
                    op.patch_type,
                    dry_run=opts.dry_run,
                    field_manager=opts.field_manager,
                    field_validation=opts.field_validation,
                    force=applying,
                )
            assert op.obj is not None
            if op.op is BatchOpKind.CREATE:
                return await self.create(op.obj, **keywords)
            if op.op is BatchOpKind.UPDATE:
                return await self.update(op.obj, **keywords)
            return await self.update_status(op.obj, **keywords)

        return await run_batch(ops, run, concurrency=self.client.options.concurrency)

    async def close(self) -> None:
        await self.client.close()
