"""`run --once --interpret flux` of a hub-and-spoke layout: the hub's `staging.yaml` holds
the namespace of a spoke and Kustomizations that deliver to that spoke through
`spec.kubeConfig` (a kubeconfig Secret), one that depends on them without one, and the hub
keeps a Kustomization of its own.

gitkrm applies to its own target only, so the spoke's Kustomizations run no child: each is
an error naming `spec.kubeConfig` (Ready=False, Stalled), and the spoke's objects (its
namespaces, a cluster-admin binding) are not made in the hub (before, they were, as "not
honoured", and clashed with the hub's own namespace). What does not depend on them syncs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitkrm.krm.conditions import find_condition
from tests.e2e.e2e_support import object_ref, read_each, run_tree
from tests.e2e.manifests import configmap, kustomization, namespace
from tests.source.source_gitrepo import RemoteRepo

FLUX_SYSTEM = {"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"}
SPOKE = (
    kustomization(
        "tenants", "./spokes/staging/tenants", namespace="staging", wait=None, timeout=None,
        sourceRef=FLUX_SYSTEM, kubeConfig={"secretRef": {"name": "cluster-kubeconfig"}},
    )
    + "---\n"
    + kustomization(
        "apps", "./spokes/staging/apps", namespace="staging", wait=None, timeout=None,
        depends_on=("tenants",), sourceRef=FLUX_SYSTEM,
    )
)  # fmt: skip

BINDING = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: flux-cluster-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: flux-cluster-admin, namespace: staging}]
"""


async def test_a_spokes_kustomizations_are_refused_and_the_hubs_own_sync(
    repo: RemoteRepo, state: Path
) -> None:
    repo.write("hub/flux-system.yaml", namespace("flux-system"))
    repo.write("hub/staging.yaml", namespace("staging") + "---\n" + SPOKE)
    repo.write("hub/local.yaml", kustomization("hub-local", "./hub-local", wait=False))
    repo.write("hub-local/settings.yaml", configmap("hub-settings", {"a": "1"}))
    repo.write("spokes/staging/tenants/rbac.yaml", namespace("podinfo") + "---\n" + BINDING)
    repo.write("spokes/staging/apps/app.yaml", configmap("app", {"b": "2"}, namespace="podinfo"))
    repo.commit("hub and spoke")
    repo.push()
    res = run_tree(repo.url, state, path="hub", interpret="flux")
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "error: Kustomization staging/tenants: spec.kubeConfig: its objects are for " in (
        res.stdout
    ), out
    assert "waiting for Kustomization staging/tenants" in res.stdout, out
    tenants, binding, spoke_ns, local = await read_each(
        state,
        object_ref("Kustomization", "tenants", "staging", "kustomize.toolkit.fluxcd.io"),
        object_ref("ClusterRoleBinding", "flux-cluster-admin", None, "rbac.authorization.k8s.io"),
        object_ref("Namespace", "podinfo", None),
        object_ref("ConfigMap", "hub-settings", "default"),
    )
    assert binding is None  # the spoke's cluster-admin binding is not made in the hub
    assert spoke_ns is None
    assert local is not None  # the hub's own Kustomization synced
    assert tenants is not None
    status: dict[str, Any] = tenants.get("status") or {}
    ready = find_condition(status.get("conditions"), "Ready")
    stalled = find_condition(status.get("conditions"), "Stalled")
    assert ready is not None
    assert ready["status"] == "False"
    assert "spec.kubeConfig" in ready["message"]
    assert stalled is not None
    assert stalled["status"] == "True"
