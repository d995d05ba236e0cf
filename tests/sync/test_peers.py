"""Every row of the peers' annotation table (docs/concepts.md) through the engine, on a
real Git repository: what Flux's and Argo CD's annotations make gitkrm do."""

from __future__ import annotations

import pytest

from gitkrm.source import GitSource
from gitkrm.store import Store
from gitkrm.sync.results import Action, SyncStatus
from tests.support.builders import crd
from tests.sync.conftest import EngineFactory, SourceFactory
from tests.sync.sync_helpers import Remote, configmap, deployment, namespace
from tests.sync.test_engine import actions, cm_ref, deploy_ref, get, inventory_keys, sync

FLUX = "kustomize.toolkit.fluxcd.io"
ARGO = "argocd.argoproj.io"


def annotated(name: str, annotations: str, data: str = "a: '1'") -> str:
    return configmap(name, data=data, extra=f"  annotations: {{{annotations}}}\n")


def start(remote: Remote, files: dict[str, str]) -> None:
    remote.write("ns.yaml", namespace("apps"))
    for path, text in files.items():
        remote.write(path, text)
    remote.commit()


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (f"{FLUX}/prune: disabled", f"{FLUX}/prune: disabled: left in place"),
        (f"{ARGO}/sync-options: Prune=false", "Prune=false/Delete=false: left in place"),
        (f"{ARGO}/sync-options: Delete=false", "Prune=false/Delete=false: left in place"),
        (f"{ARGO}/compare-options: IgnoreExtraneous", "IgnoreExtraneous: left in place"),
        (f"{FLUX}/reconcile: disabled", f"{FLUX}/reconcile: disabled: left in place"),
    ],
)
async def test_objects_gone_from_git_left_in_place(
    store: Store,
    remote: Remote,
    source: GitSource,
    make_engine: EngineFactory,
    annotation: str,
    message: str,
) -> None:
    start(remote, {"keep.yaml": annotated("keep", annotation), "other.yaml": configmap("other")})
    engine = make_engine()
    assert (await sync(engine, source)).ok
    remote.remove("keep.yaml")
    remote.remove("other.yaml")
    remote.commit("remove both")
    plan = await engine.plan(await source.snapshot())
    result = await sync(engine, source)
    assert result.ok, result.problems()
    keep = next(o for o in result.objects if o.ref.name == "keep")
    assert keep.action is Action.SKIPPED
    assert message in keep.message
    assert actions(result)["ConfigMap/other"] is Action.PRUNED
    assert await get(store, cm_ref("keep")) is not None
    assert not any("_keep_" in k for k in await inventory_keys(store))  # no longer owned
    assert not plan.in_sync  # "other" is pruned; "keep" alone would not count as a change
    assert {s.ref.name for s in plan.steps if s.op.value == "orphan"} == {"keep"}


async def test_prune_last_is_a_no_op(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    start(remote, {"last.yaml": annotated("last", f"{ARGO}/sync-options: PruneLast=true")})
    engine = make_engine()
    first = await sync(engine, source)
    assert first.ok
    assert first.warnings == ()  # honoured: gitkrm prunes last anyway
    remote.remove("last.yaml")
    remote.commit("remove")
    result = await sync(engine, source)
    assert actions(result)["ConfigMap/last"] is Action.PRUNED


async def test_flux_reconcile_disabled_leaves_the_object_alone(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    start(remote, {"cm.yaml": annotated("frozen", f"{FLUX}/reconcile: disabled")})
    engine = make_engine()
    assert (await sync(engine, source)).ok
    remote.write("cm.yaml", annotated("frozen", f"{FLUX}/reconcile: disabled", data="a: '2'"))
    remote.commit("change")
    result = await sync(engine, source)
    assert actions(result)["ConfigMap/frozen"] is Action.SKIPPED
    assert (await store.get(cm_ref("frozen")))["data"] == {"a": "1"}


async def test_flux_ssa_modes(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    files = {
        f"{mode}.yaml": annotated(mode.lower(), f"{FLUX}/ssa: {mode}")
        for mode in ("IfNotPresent", "Ignore", "Override", "Merge")
    }
    start(remote, files)
    engine = make_engine()
    first = await sync(engine, source)
    assert first.ok, first.problems()
    assert actions(first)["ConfigMap/ifnotpresent"] is Action.CREATED  # created when absent
    assert actions(first)["ConfigMap/ignore"] is Action.SKIPPED
    assert await get(store, cm_ref("ignore")) is None  # never applied
    for mode in ("IfNotPresent", "Ignore", "Override", "Merge"):
        remote.write(f"{mode}.yaml", annotated(mode.lower(), f"{FLUX}/ssa: {mode}", data="a: '2'"))
    remote.commit("change all")
    result = await sync(engine, source)
    assert result.ok, result.problems()
    assert actions(result)["ConfigMap/ifnotpresent"] is Action.UNCHANGED
    assert (await store.get(cm_ref("ifnotpresent")))["data"] == {"a": "1"}  # never updated
    for name in ("override", "merge"):  # applied as gitkrm applies
        assert actions(result)[f"ConfigMap/{name}"] is Action.CONFIGURED
        assert (await store.get(cm_ref(name)))["data"] == {"a": "2"}
    remote.write("bad.yaml", annotated("bad", f"{FLUX}/ssa: Sometimes"))
    remote.commit("a bad mode")
    bad = await sync(engine, source)
    assert bad.status is SyncStatus.FAILED
    assert bad.errors[0].startswith("bad.yaml:1: ConfigMap apps/bad: annotation ")
    assert "must be IfNotPresent, Ignore, Override or Merge" in bad.errors[0]


IMMUTABLE = deployment("web").replace("{app: web}", "{app: web2}")


@pytest.mark.parametrize(
    "annotation", [f"{FLUX}/force: enabled", f"{ARGO}/sync-options: Force=true"]
)
async def test_force_recreates_on_an_immutable_change(
    store: Store,
    remote: Remote,
    source: GitSource,
    make_engine: EngineFactory,
    annotation: str,
) -> None:
    start(remote, {"web.yaml": deployment("web")})
    engine = make_engine()
    assert (await sync(engine, source)).ok
    uid = (await store.get(deploy_ref()))["metadata"]["uid"]
    key, value = annotation.split(": ")
    forced = IMMUTABLE.replace(
        "  namespace: apps\n", f"  namespace: apps\n  annotations:\n    {key}: {value}\n", 1
    )
    remote.write("web.yaml", forced)
    remote.commit("new selector, forced")
    result = await sync(engine, source)
    assert result.ok, result.problems()
    assert (await store.get(deploy_ref()))["metadata"]["uid"] != uid


async def test_server_side_apply_per_object(
    store: Store, remote: Remote, make_source: SourceFactory, make_engine: EngineFactory
) -> None:
    start(
        remote,
        {
            "ssa.yaml": annotated("ssa", f"{ARGO}/sync-options: ServerSideApply=true"),
            "csa.yaml": configmap("csa"),
        },
    )
    engine, source = make_engine(), make_source(remote.url)  # a client-side source
    assert (await sync(engine, source)).ok
    ssa, csa = await store.get(cm_ref("ssa")), await store.get(cm_ref("csa"))
    assert [(m["manager"], m["operation"]) for m in ssa["metadata"]["managedFields"]] == [
        ("gitkrm", "Apply")
    ]
    assert "kubectl.kubernetes.io/last-applied-configuration" not in ssa["metadata"]["annotations"]
    assert "kubectl.kubernetes.io/last-applied-configuration" in csa["metadata"]["annotations"]
    remote.write(
        "ssa.yaml", annotated("ssa", f"{ARGO}/sync-options: ServerSideApply=true", data="a: '2'")
    )
    remote.commit("change")
    result = await sync(engine, source)
    assert actions(result)["ConfigMap/ssa"] is Action.CONFIGURED
    assert (await store.get(cm_ref("ssa")))["data"] == {"a": "2"}
    again = await sync(engine, source)
    assert actions(again)["ConfigMap/ssa"] is Action.UNCHANGED


async def test_unhonoured_annotations_are_reported_once_per_sync(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    start(
        remote,
        {
            "r.yaml": annotated("r", f"{ARGO}/sync-options: Replace=true"),
            "v.yaml": annotated("v", f"{ARGO}/sync-options: 'Validate=false,Prune=false'")
            + "bogus: dropped\n",
            "t1.yaml": annotated("t1", f"{ARGO}/tracking-id: 'x:/ConfigMap:apps/t1'"),
            "t2.yaml": annotated("t2", f"{ARGO}/tracking-id: 'x:/ConfigMap:apps/t2'"),
            "f.yaml": annotated("f", f"{FLUX}/checksum: abc"),
        },
    )
    engine = make_engine()
    result = await sync(engine, source)
    assert result.ok, result.problems()  # warnings do not fail the sync
    assert result.counts["created"] == 6
    w = "\n".join(result.warnings)
    assert "r.yaml:1: ConfigMap apps/r: Replace=true is not honoured" in w
    assert (
        "v.yaml:1: ConfigMap apps/v: Validate=false: unknown field(s) dropped, as the API "
        "server does: bogus"
    ) in w
    assert len(result.warnings) == 4
    assert (
        f"annotation '{ARGO}/tracking-id' is not honoured by gitkrm (2 objects, first "
        "ConfigMap apps/t1 at t1.yaml:1)"
    ) in w
    assert (
        f"annotation '{FLUX}/checksum' is not honoured by gitkrm (1 object, first ConfigMap "
        "apps/f at f.yaml:1)"
    ) in w
    again = await sync(engine, source)  # said again on every sync, once each
    assert again.warnings == result.warnings


SKIP_DRY_RUN = (
    "  annotations: {argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true}\n"
)
GIZMO = """\
apiVersion: example.com/v1
kind: Gizmo
metadata:
  name: g
  namespace: apps
  annotations: {argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true}
spec: {size: 3}
"""
GIZMO_CRD = crd("Gizmo")  # spec: size and color


async def test_skip_dry_run_on_missing_resource(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    start(
        remote,
        {
            "gizmo.yaml": GIZMO.replace(SKIP_DRY_RUN, ""),
            "cm.yaml": configmap("cm"),
        },
    )
    engine = make_engine()
    refused = await sync(engine, source)  # without the option: refused as a whole
    assert refused.status is SyncStatus.FAILED
    assert 'unknown kind "Gizmo"' in refused.errors[0]
    assert await get(store, cm_ref("cm")) is None
    remote.write("gizmo.yaml", GIZMO)
    remote.commit("skip the dry run")
    result = await sync(engine, source)  # accepted; the rest applied; the Gizmo waits
    assert actions(result)["ConfigMap/cm"] is Action.CREATED
    assert actions(result)["Gizmo/g"] is Action.FAILED
    await store.create(GIZMO_CRD)  # its kind is served now (an operator installed it)
    later = await sync(engine, source)
    assert later.ok, later.problems()
    assert actions(later)["Gizmo/g"] is Action.CREATED


async def test_an_applications_validate_false_drops_unknown_fields_of_every_object(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    """Argo CD's application-wide `syncOptions: [Validate=false]` (argo-cd's e2e
    sync-options-validate-false puts it on the Application too)."""
    from gitkrm.sync.appsource_spec import AppSource

    start(remote, {"a.yaml": configmap("a") + "bogus: dropped\n", "b.yaml": configmap("b")})
    strict = await sync(make_engine(app_source=AppSource()), source)
    assert not strict.ok
    assert any("bogus" in p for p in strict.problems()), strict.problems()
    lenient = await sync(make_engine(app_source=AppSource(validate=False)), source)
    assert lenient.ok, lenient.problems()
    assert (await store.get(cm_ref("a"))).get("bogus") is None
    assert any("a.yaml:1: ConfigMap apps/a: Validate=false: unknown field(s) dropped" in w
               for w in lenient.warnings), lenient.warnings  # fmt: skip
