"""Helm charts in a Git source, synced by the engine into the SQLite store: install, values
change, version bump, `git revert`, a broken template refused with nothing applied, hooks on
the first sync and on upgrades, and crds/ that are never pruned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitkrm.charts.spec import HelmSpec
from gitkrm.errors import NotFound
from gitkrm.krm import GVK, ObjectRef
from gitkrm.source import GitSource
from gitkrm.store import Store
from gitkrm.sync.results import SyncStatus
from tests.charts.chart_files import SHOP, bump, shop_files
from tests.support.chartrepo import ChartRepo, chart_repo
from tests.sync.conftest import EngineFactory
from tests.sync.sync_helpers import Remote, namespace
from tests.sync.test_engine import seeded_engine, sync

SPEC = HelmSpec.from_spec({"releaseName": "web", "namespace": "shop"})
CACHE = SHOP / "charts" / "cache"
__all__ = ["chart_repo"]  # the fixture


def ref(kind: str, name: str, *, group: str = "", ns: str | None = "shop") -> ObjectRef:
    return ObjectRef(group=group, kind=kind, name=name, namespace=ns)


# Hooks run for real: PostSync hooks wait until the chart's Deployment is Available, which
# the bundled controllers make it.
pytestmark = pytest.mark.usefixtures("controllers")


async def get(store: Store, r: ObjectRef) -> dict[str, Any] | None:
    try:
        return await store.get(r)
    except NotFound:
        return None


def seed(remote: Remote) -> str:
    remote.write("namespaces.yaml", namespace("shop"))
    for path, data in shop_files("apps/shop").items():
        remote.write(path, data)
    return remote.commit("shop 1.0.0")


async def test_a_chart_installs_then_upgrades_and_rolls_back(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    seed(remote)
    engine = make_engine(helm=SPEC)
    result = await sync(engine, source)
    assert result.status is SyncStatus.SUCCEEDED, result.problems()
    [release] = result.releases  # what the note and the status file record
    assert {k: v for k, v in release.items() if k != "digest"} == {
        "release": "web",
        "namespace": "shop",
        "chart": "shop",
        "version": "1.0.0",
        "path": "apps/shop",
    }
    assert release["digest"].startswith("sha256:")
    deploy = await store.get(ref("Deployment", "web", group="apps"))
    assert deploy["metadata"]["labels"]["helm.sh/chart"] == "shop-1.0.0"
    assert deploy["metadata"]["labels"]["gitkrm.io/source"] == "src"  # owned like any object
    settings = await store.get(ref("ConfigMap", "web-settings"))
    assert settings["data"]["installing"] == "true"
    assert settings["data"]["kubeVersion"] == "v1.33.0"  # the embedded target's
    assert settings["data"]["widgets"] == "true"  # its own crds/, as Helm installs them first
    assert settings["data"]["monitoring"] == "false"  # nothing serves ServiceMonitors here
    assert await get(store, ref("ConfigMap", "web-cache"))  # the subchart
    assert await get(store, ref("Widget", "web-front", group="shop.example.com"))  # crds/ first
    # The pre-install hook ran as a PreSync hook (and its hook-succeeded policy deleted it),
    # the post-install one as a PostSync hook; the pre-upgrade one did not run.
    assert [(h.phase.value, h.ref.name, h.deleted) for h in result.hooks] == [
        ("PreSync", "web-migrate-install", True),
        ("PostSync", "web-announce", False),
    ]
    assert await get(store, ref("ConfigMap", "web-migrate-install")) is None
    assert await get(store, ref("ConfigMap", "web-migrate-upgrade")) is None
    assert await get(store, ref("Pod", "web-test")) is None  # test hooks never
    secrets = await store.list(GVK(group="", version="v1", kind="Secret"))
    assert secrets["items"] == []  # no Helm release Secret (nor any other)

    # A values change: an upgrade, with the upgrade hooks.
    remote.write("apps/shop/values.yaml", shop_files()["shop/values.yaml"].replace(b"hello", b"hi"))
    remote.commit("greeting")
    result = await sync(engine, source)
    assert result.status is SyncStatus.SUCCEEDED, result.problems()
    settings = await store.get(ref("ConfigMap", "web-settings"))
    assert (settings["data"]["greeting"], settings["data"]["upgrading"]) == ("hi", "true")
    hook = await store.get(ref("ConfigMap", "web-migrate-upgrade"))
    assert hook["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PreSync"

    # A version bump, then `git revert` rolls it back.
    for path, data in bump(shop_files("apps/shop"), "1.1.0", "apps/shop").items():
        remote.write(path, data)
    remote.commit("shop 1.1.0")
    result = await sync(engine, source)
    assert result.status is SyncStatus.SUCCEEDED, result.problems()
    deploy = await store.get(ref("Deployment", "web", group="apps"))
    assert deploy["metadata"]["labels"]["helm.sh/chart"] == "shop-1.1.0"
    remote.revert_head()
    result = await sync(engine, source)
    assert result.status is SyncStatus.SUCCEEDED, result.problems()
    deploy = await store.get(ref("Deployment", "web", group="apps"))
    assert deploy["metadata"]["labels"]["helm.sh/chart"] == "shop-1.0.0"


async def test_a_broken_template_is_refused_and_nothing_is_applied(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    engine = await seeded_engine(remote, source, make_engine, seed=seed, helm=SPEC)
    before = await store.get(ref("ConfigMap", "web-settings"))
    remote.write("apps/shop/values.yaml", shop_files()["shop/values.yaml"].replace(b"hello", b"x"))
    remote.write("apps/shop/templates/service.yaml", b"{{ .Values.nope.deeper }}\n")
    remote.write(
        "extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: shop\n",
    )
    remote.commit("broken")
    result = await sync(engine, source)
    assert result.status is SyncStatus.FAILED
    problems = " ".join(result.problems())
    assert "apps/shop/Chart.yaml" in problems  # the chart
    assert "shop/templates/service.yaml" in problems  # the template
    assert "nil pointer evaluating interface {}.deeper" in problems  # Helm's message
    after = await store.get(ref("ConfigMap", "web-settings"))
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert await get(store, ref("ConfigMap", "extra")) is None  # nothing of the revision


async def test_crds_of_a_chart_are_not_pruned(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    engine = await seeded_engine(remote, source, make_engine, seed=seed, helm=SPEC)
    crd = ref(
        "CustomResourceDefinition",
        "widgets.shop.example.com",
        group="apiextensions.k8s.io",
        ns=None,
    )
    assert await get(store, crd)
    remote.remove("apps/shop")
    remote.commit("no more shop")
    result = await sync(engine, source)
    assert result.ok, result.problems()
    assert await get(store, ref("Deployment", "web", group="apps")) is None  # pruned
    assert await get(store, crd)  # kept


async def test_a_dependency_range_follows_the_chart_repository_at_every_sync(
    store: Store,
    remote: Remote,
    source: GitSource,
    make_engine: EngineFactory,
    chart_repo: ChartRepo,
) -> None:
    for v in ("0.1.0", "0.2.0", "1.0.0"):
        chart_repo.publish(CACHE, v)
    remote.write("namespaces.yaml", namespace("shop"))
    remote.write(
        "front/Chart.yaml",
        "apiVersion: v2\nname: front\nversion: 1.0.0\ndependencies:\n"
        f"- name: cache\n  version: '>=0.1.0 <1.0.0'\n  repository: {chart_repo.url}\n",
    )
    remote.commit("front")
    engine = make_engine(helm=SPEC)
    result = await sync(engine, source)
    assert result.ok, result.problems()
    cache = await store.get(ref("ConfigMap", "web-cache"))
    assert cache["data"]["version"] == "0.2.0"  # the newest in range, not 1.0.0
    chart_repo.publish(CACHE, "0.3.0")
    result = await sync(engine, source)  # the same revision of the source
    assert result.ok, result.problems()
    cache = await store.get(ref("ConfigMap", "web-cache"))
    assert cache["data"]["version"] == "0.3.0"


async def test_a_restart_keeps_random_values_and_warns_once(
    store: Store, remote: Remote, source: GitSource, tmp_path: Path
) -> None:
    from gitkrm.sync.engine import SyncEngine
    from gitkrm.sync.options import SyncOptions
    from gitkrm.sync.parsecache import ParseCache

    seed(remote)
    remote.write(
        "apps/shop/templates/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-db\n"
        "stringData:\n  password: {{ randAlphaNum 24 | quote }}\n",
    )
    remote.commit("a generated password")
    snap = await source.snapshot()

    def engine() -> SyncEngine:
        cache = ParseCache(tmp_path / "state" / "cache" / "parsed" / "src.bin")
        options = SyncOptions(source_name="src", agent_name="agent", helm=SPEC)
        return SyncEngine(store=store, options=options, parse_cache=cache)

    first = engine()
    rendered = await first._render.renderer.render(snap)  # the warning of the double render
    assert [(w.path, "renders differently" in w.message) for w in rendered.warnings] == [
        ("apps/shop/templates/secret.yaml", True)
    ]
    assert (await first.sync(snap)).ok
    await first.close()
    password = (await store.get(ref("Secret", "web-db")))["data"]["password"]
    second = engine()  # a restart
    result = await second.sync(snap)
    await second.close()
    assert result.ok, result.problems()
    assert result.counts.configured == 0  # nothing rendered anew: nothing rotated
    assert (await store.get(ref("Secret", "web-db")))["data"]["password"] == password


async def test_objects_helm_install_made_are_adopted_only_when_the_source_says_always(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    from gitkrm.sync.options import AdoptionPolicy
    from gitkrm.sync.results import Action

    seed(remote)
    await store.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "shop"},
        }
    )
    await store.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "web-settings",
                "namespace": "shop",
                "labels": {"app.kubernetes.io/managed-by": "Helm"},
                "annotations": {
                    "meta.helm.sh/release-name": "web",
                    "meta.helm.sh/release-namespace": "shop",
                },
            },
            "data": {"greeting": "from helm install"},
        }
    )
    for policy in (AdoptionPolicy.NEVER, AdoptionPolicy.IF_UNOWNED):
        result = await sync(make_engine(helm=SPEC, adoption=policy), source)
        refused = {o.ref.name: o.action for o in result.objects if o.ref.kind == "ConfigMap"}
        assert refused["web-settings"] is Action.REFUSED, policy  # Helm's, left alone
    result = await sync(make_engine(helm=SPEC, adoption=AdoptionPolicy.ALWAYS), source)
    assert result.ok, result.problems()
    settings = await store.get(ref("ConfigMap", "web-settings"))
    assert settings["data"]["greeting"] == "hello"  # adopted and set to the chart's
    assert settings["metadata"]["labels"]["gitkrm.io/source"] == "src"


async def test_an_overlay_is_laid_over_the_charts_objects(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    """A HelmRelease's postRenderers: kustomize patches and images over what Helm rendered."""
    from gitkrm.sync.overlay_spec import ImageOverride, Overlay, OverlayPatch

    seed(remote)
    patch = "- op: add\n  path: /metadata/labels/patched\n  value: 'yes'\n"
    overlay = Overlay(
        patches=(OverlayPatch(patch, (("kind", "Deployment"),)),),
        images=(ImageOverride(name="registry.example.com/shop", new_tag="9.9"),),
    )
    engine = make_engine(helm=SPEC, overlay=overlay)
    result = await sync(engine, source)
    assert result.status is SyncStatus.SUCCEEDED, result.problems()
    deploy = await get(store, ref("Deployment", "web", group="apps"))
    assert deploy is not None
    assert deploy["metadata"]["labels"]["patched"] == "yes"
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":9.9")


UMBRELLA = """\
apiVersion: v2
name: umbrella
version: 1.0.0
dependencies:
- {name: inner, version: 0.1.0, repository: "file://inner"}
"""
INNER_CM = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: inner-settings, namespace: shop}
data: {greeting: {{ .Values.greeting | quote }}}
"""


async def test_a_file_dependency_is_packed_from_the_revision(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    # eks-blueprints-add-ons' shape: an umbrella chart whose dependencies are directories
    # of its own (`file://inner`), not vendored in charts/: packed as `helm dependency
    # build` would, and a change to them is a new render.
    remote.write("namespaces.yaml", namespace("shop"))
    remote.write("apps/umbrella/Chart.yaml", UMBRELLA)
    remote.write("apps/umbrella/values.yaml", "inner: {greeting: from-umbrella}\n")
    remote.write("apps/umbrella/inner/Chart.yaml", "apiVersion: v2\nname: inner\nversion: 0.1.0\n")
    remote.write("apps/umbrella/inner/values.yaml", "greeting: inner-default\n")
    engine = make_engine(helm=SPEC)
    for commit, key in (("an umbrella chart", "greeting"), ("the dependency changes", "hello")):
        remote.write(
            "apps/umbrella/inner/templates/cm.yaml", INNER_CM.replace("{greeting:", "{" + key + ":")
        )
        remote.commit(commit)
        result = await sync(engine, source)
        assert result.status is SyncStatus.SUCCEEDED, result.problems()
        cm = await store.get(ref("ConfigMap", "inner-settings"))
        assert cm["data"] == {key: "from-umbrella"}
    # one that climbs out of the source: named, nothing applied
    remote.write("apps/umbrella/Chart.yaml", UMBRELLA.replace("file://inner", "file://../../../x"))
    remote.commit("out of the source")
    result = await sync(engine, source)
    assert result.status is SyncStatus.FAILED
    assert "dependency 'inner' (file://../../../x) is outside the source's path" in " ".join(
        result.problems()
    )
