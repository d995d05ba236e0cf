"""KubeStore beyond the shared Store contract: discovery of kinds that appear, best-effort
batches, server-side apply parameters, and the sync engine (inventory, drift from watches)
working unchanged over HTTP."""

from __future__ import annotations

import contextlib
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from gitkrm.errors import AlreadyExists, BadRequest, NotFound, UnsupportedMediaType
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store import BatchOp, BatchOpKind
from gitkrm.store.kube import KubeStore
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.results import SyncResult
from tests.store.kube.conftest import cm, new_namespace
from tests.store.kube.faultproxy import FaultProxy
from tests.support.builders import crd
from tests.support.wait import eventually_async
from tests.sync.sync_helpers import snapshot

CM = GVK(group="", version="v1", kind="ConfigMap")


def _crd(plural: str, kind: str) -> dict[str, Any]:
    return crd(
        kind,
        "kube.test",
        plural=plural,
        schema={"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        status_subresource=False,
    )


async def test_discovery_finds_a_kind_whose_crd_appears(kube: KubeStore) -> None:
    ns = await new_namespace(kube)
    widget = {
        "apiVersion": "kube.test/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": ns},
        "spec": {"size": 3},
    }
    with pytest.raises(NotFound, match='no resource for kind "Widget"'):
        await kube.create(widget)
    await kube.create(_crd("widgets", "Widget"))
    made = await kube.create(widget)
    assert made["spec"] == {"size": 3}
    got = await kube.get(ObjectRef(group="kube.test", kind="Widget", name="w", namespace=ns))
    assert got["metadata"]["uid"] == made["metadata"]["uid"]  # no version: the preferred one
    refreshes = kube.discovery.refreshes
    for _ in range(3):
        await kube.list(GVK(group="kube.test", version="v1", kind="Widget"), namespace=ns)
    assert kube.discovery.refreshes == refreshes  # cached


async def test_batch_is_best_effort_in_object_order(kube: KubeStore) -> None:
    ns = await new_namespace(kube)
    await kube.create(cm("taken", ns))
    ref = ObjectRef(group="", kind="ConfigMap", name="chain", namespace=ns)
    ops = [
        BatchOp(op=BatchOpKind.CREATE, obj=cm("a", ns)),
        BatchOp(op=BatchOpKind.CREATE, obj=cm("taken", ns)),  # fails: AlreadyExists
        BatchOp(op=BatchOpKind.CREATE, obj=cm("chain", ns)),
        BatchOp(op=BatchOpKind.PATCH, ref=ref, patch={"data": {"k": "1"}}, patch_type="merge"),
        BatchOp(op=BatchOpKind.PATCH, ref=ref, patch={"data": {"j": "2"}}, patch_type="merge"),
        BatchOp(op=BatchOpKind.CREATE, obj=cm("z", ns)),
    ]
    with pytest.raises(AlreadyExists, match="taken"):
        await kube.batch(ops)
    listed = await kube.list(CM, namespace=ns)
    names = sorted(o["metadata"]["name"] for o in listed["items"])
    assert names == ["a", "chain", "taken", "z"]  # the others all landed
    assert (await kube.get(ref))["data"] == {"k": "1", "j": "2"}  # in order
    out = await kube.batch(
        [BatchOp(op=BatchOpKind.DELETE, ref=ref), BatchOp(op=BatchOpKind.CREATE, obj=cm("n", ns))]
    )
    assert len(out) == 2
    assert out[1]["metadata"]["name"] == "n"
    with pytest.raises(BadRequest, match="needs a ref"):
        await kube.batch([BatchOp(op=BatchOpKind.DELETE)])


async def test_apply_patch_sends_field_manager_and_force(
    proxied: KubeStore, proxy: FaultProxy
) -> None:
    ns = await new_namespace(proxied)
    await proxied.create(cm("sa", ns))
    ref = ObjectRef(group="", kind="ConfigMap", name="sa", namespace=ns, version="v1")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sa"}, "data": {}}
    with pytest.raises(BadRequest, match="force is only for apply"):
        await proxied.patch(ref, body, "merge", force=True)
    with contextlib.suppress(UnsupportedMediaType):  # a server without server-side apply
        await proxied.patch(ref, body, "apply", field_manager="gitkrm", force=True, dry_run=True)
    head = next(h for h in reversed(proxy.heads) if h.startswith(b"PATCH"))
    query = parse_qs(urlsplit(head.split(b" ")[1].decode()).query)
    assert query["fieldManager"] == ["gitkrm"]
    assert query["force"] == ["true"]
    assert query["dryRun"] == ["All"]
    assert query["fieldValidation"] == ["Strict"]
    assert b"content-type: application/apply-patch+yaml" in head.lower()


def _app(i: int, ns: str) -> str:
    return f"""apiVersion: v1
kind: ConfigMap
metadata: {{name: app-{i}, namespace: {ns}}}
data: {{v: "{i}"}}
"""


def _check(result: SyncResult, **counts: int) -> None:
    assert result.ok, result.problems()
    for k, v in counts.items():
        assert result.counts[k] == v, dict(result.counts)


async def _wait(condition: Any, within: float = 10.0) -> None:
    await eventually_async(condition, timeout=within, interval=0.01, message=repr(condition))


async def test_the_sync_engine_over_http(kube: KubeStore) -> None:
    ns = "engine-over-http"
    files = {"ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n"}
    files.update({f"apps/app-{i}.yaml": _app(i, ns) for i in range(40)})  # listed, not got
    engine = SyncEngine(store=kube, options=SyncOptions(source_name="http", agent_name="t"))
    try:
        _check(await engine.sync(snapshot(files)), created=41)
        requests = kube.client.requests
        _check(await engine.sync(snapshot(files)), unchanged=41)
        quiet = kube.client.requests - requests
        assert quiet <= 6  # inventory and revision reads: no object is read again
        ref = ObjectRef(group="", kind="ConfigMap", name="app-7", namespace=ns)
        await kube.patch(ref, {"data": {"v": "changed"}}, "merge")  # drift, seen by a watch
        await _wait(lambda: any("app-7" in k for k in engine._tracker.dirty))
        _check(await engine.check_drift(), configured=1)
        assert (await kube.get(ref))["data"] == {"v": "7"}
        del files["apps/app-3.yaml"]
        _check(await engine.sync(snapshot(files, revision="rev-2")), pruned=1)
        with pytest.raises(NotFound):
            await kube.get(ObjectRef(group="", kind="ConfigMap", name="app-3", namespace=ns))
    finally:
        await engine.close()


async def test_the_server_version_is_what_helm_charts_see(kube: KubeStore) -> None:
    version = await kube.server_version()
    assert version.startswith("v1.33.")
    engine = SyncEngine(store=kube, options=SyncOptions(source_name="s", agent_name="a"))
    snap = snapshot(
        {
            "app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n",
            "app/templates/cm.yaml": (
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube-version\n"
                "data:\n  version: {{ .Capabilities.KubeVersion.Version | quote }}\n"
            ),
        }
    )
    try:
        plan = await engine.plan(snap)
    finally:
        await engine.close()
    assert not plan.errors, plan.errors
    [desired] = [s.desired for s in plan.steps if s.desired is not None]
    assert desired.obj["data"]["version"] == version  # not the embedded target's 1.33.0
