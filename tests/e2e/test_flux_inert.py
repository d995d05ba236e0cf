"""`run --once --interpret flux` of a fleet whose Flux CRDs are not in the repository (a
placeholder `gotk-components.yaml`, as in Flux's example repositories) and which carries
notification-controller's Provider and Alert and an ImageRepository, as many fleets do.

`flux bootstrap` would have installed their CRDs; gitkrm registers stand-ins, applies the
objects and says, once per source and kind, that nothing acts on them (before: "unknown
kind Alert ... no CustomResourceDefinition", and the whole Kustomization was refused)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.e2e_support import cm_ref, object_ref, read_each, run_tree
from tests.e2e.manifests import configmap, kustomization, namespace
from tests.source.source_gitrepo import RemoteRepo

PROVIDER = """\
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: chat, namespace: flux-system}
spec: {type: generic, address: "http://127.0.0.1:9/hook"}
"""
ALERT = """\
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: %s, namespace: flux-system}
spec:
  providerRef: {name: chat}
  eventSources: [{kind: Kustomization, name: "*"}]
"""
IMAGE_REPOSITORY = """\
apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageRepository
metadata: {name: web, namespace: flux-system}
spec: {image: registry.example/web, interval: 5m}
"""


async def test_notification_and_image_objects_sync_and_are_said_to_be_inert(
    tmp_path: Path, state: Path
) -> None:
    fleet = RemoteRepo(tmp_path / "fleet")
    fleet.write("clusters/dev/ns.yaml", namespace("flux-system"))
    fleet.write("clusters/dev/notifications.yaml", PROVIDER + "---\n" + ALERT % "all")
    fleet.write("clusters/dev/apps.yaml", kustomization("apps", "./apps", wait=False))
    fleet.write("apps/settings.yaml", configmap("settings", {"a": "1"}))
    fleet.write("apps/more-alerts.yaml", ALERT % "apps" + "---\n" + IMAGE_REPOSITORY)
    fleet.commit("fleet")
    fleet.push()
    res = run_tree(fleet.url, state, path="clusters/dev", interpret="flux")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    group = "notification.toolkit.fluxcd.io"
    objs = await read_each(
        state,
        cm_ref("settings"),
        object_ref("Alert", "all", "flux-system", group),
        object_ref("Alert", "apps", "flux-system", group),
        object_ref("Provider", "chat", "flux-system", group),
        object_ref("ImageRepository", "web", "flux-system", "image.toolkit.fluxcd.io"),
    )
    assert all(o is not None for o in objs), objs
    inert = [line for line in out.splitlines() if "is applied, not acted on" in line]
    # once per source and kind: the parent's Alert and Provider, the child's Alert and
    # ImageRepository (the child's name is the Kustomization's, hashed)
    assert len(inert) == 4, inert
    assert sum("Alert flux-system/" in line for line in inert) == 2
    assert any(
        "source default: Provider flux-system/chat is applied, not acted on: gitkrm sends "
        "no Flux notifications" in line
        for line in inert
    ), inert
    assert any("ImageRepository flux-system/web" in line and "scans no image" in line
               for line in inert), inert  # fmt: skip
