"""kubectl as the judge of server-side apply without churn: re-applying an unchanged
manifest that leaves out what the server defaults (`strategy: {}`, a pod template's
`creationTimestamp: null`, an env `fieldRef` without `apiVersion`, `volumeClaimTemplates`)
keeps the resourceVersion and the generation, and the Deployment keeps its one ReplicaSet,
with kubectl 1.32 and 1.28, against `gitkrm serve` with its controllers; a
client-side-applied object keeps its last-applied annotation through another manager's
server-side apply."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from gitkrm.controllers import ControllerOptions
from gitkrm.server import ServeOptions, ServerThread
from gitkrm.server.context import Limits
from tests.server.conftest import Kubectl, kubectl_path
from tests.support import defaultable
from tests.support.manifests import yaml_text
from tests.support.wait import eventually


def deployment(name: str, *, replicas: int = 2, pod_env: bool = True) -> str:
    """The Deployment as `kubectl create --dry-run -o yaml` writes it."""
    return yaml_text(
        defaultable.deployment(
            name, replicas=replicas, image="nginx:1.25", pod_env=pod_env, creationTimestamp=None
        )
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    state = tmp_path_factory.mktemp("state")
    with ServerThread(
        store_path=str(state / "store.db"),
        options=ServeOptions(port=0, state_dir=state, limits=Limits(stuck_watch_timeout=2.0)),
        controllers=ControllerOptions(pod_start_delay=0.05, pod_run_duration=0.05),
    ) as s:
        yield s


def kubectl_for(server: ServerThread, version: str | None, home: Any) -> Kubectl:
    assert server.bound is not None
    assert server.bound.kubeconfig is not None
    return Kubectl(binary=kubectl_path(version), kubeconfig=server.bound.kubeconfig, home=home)


def get(k: Kubectl, kind: str, name: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(
        k("get", kind, name, "-n", "default", "-o", "json", "--show-managed-fields")
    )
    return out


def replicasets(k: Kubectl, app: str) -> list[str]:
    out = json.loads(k("get", "replicasets", "-n", "default", "-l", f"app={app}", "-o", "json"))
    return sorted(i["metadata"]["name"] for i in out["items"])


def settled(k: Kubectl, kind: str, name: str) -> dict[str, Any]:
    """The object once its controller has observed it and stopped writing its status."""

    def check() -> dict[str, Any] | None:
        first = get(k, kind, name)
        status = first.get("status") or {}
        if status.get("observedGeneration") != first["metadata"]["generation"]:
            return None
        if status.get("readyReplicas") != first["spec"]["replicas"]:
            return None
        again = get(k, kind, name)
        same = again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        return again if same else None

    out = eventually(check, timeout=30.0, interval=0.1, message=f"{kind} settled")
    assert out is not None
    return out


@pytest.mark.parametrize("version", [None, "1.28"], ids=["kubectl-1.32", "kubectl-1.28"])
def test_reapplying_a_deployment_is_a_no_op(
    server: ServerThread, version: str | None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    k = kubectl_for(server, version, tmp_path_factory.mktemp("home"))
    name = f"web-{(version or '132').replace('.', '')}"
    manifest = deployment(name)
    ssa = ("apply", "--server-side", "-f", "-")
    assert k(*ssa, input=manifest) == f"deployment.apps/{name} serverside-applied\n"
    first = settled(k, "deployment", name)
    assert len(replicasets(k, name)) == 1
    assert k(*ssa, input=manifest) == f"deployment.apps/{name} serverside-applied\n"
    again = get(k, "deployment", name)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert again["metadata"]["generation"] == 1
    assert again["metadata"]["managedFields"] == first["metadata"]["managedFields"]
    assert len(replicasets(k, name)) == 1
    same = k.run("diff", "--server-side", "-f", "-", input=manifest, check=False)
    assert same.returncode == 0, same.stdout + same.stderr


def test_reapplying_a_statefulset_is_a_no_op(
    server: ServerThread, tmp_path_factory: pytest.TempPathFactory
) -> None:
    k = kubectl_for(server, None, tmp_path_factory.mktemp("home"))
    manifest = yaml_text(defaultable.statefulset(replicas=1, image="postgres:16"))
    k("apply", "--server-side", "-f", "-", input=manifest)
    first = settled(k, "statefulset", "db")
    k("apply", "--server-side", "-f", "-", input=manifest)
    again = get(k, "statefulset", "db")
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert again["metadata"]["generation"] == 1
    same = k.run("diff", "--server-side", "-f", "-", input=manifest, check=False)
    assert same.returncode == 0, same.stdout + same.stderr


def test_kubectl_server_side_apply_keeps_the_client_side_annotation(
    server: ServerThread, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """kubectl's move from client-side to server-side apply (its default manager): the
    last-applied annotation stays, owned by kubectl-last-applied, and the server keeps
    it up to date on kubectl's applies (lastappliedupdater), as kube-apiserver does."""
    k = kubectl_for(server, None, tmp_path_factory.mktemp("home"))
    # Without the env fieldRef: an atomic struct the server completed (apiVersion) is a
    # changed value to structured-merge-diff, so kubectl-client-side-apply's ownership of
    # it conflicts, on kube-apiserver too.
    manifest = deployment("csa", pod_env=False)
    assert k("apply", "-f", "-", input=manifest) == "deployment.apps/csa created\n"
    settled(k, "deployment", "csa")
    changed = deployment("csa", replicas=3, pod_env=False)
    k("apply", "--server-side", "-f", "-", input=changed)
    after = get(k, "deployment", "csa")
    note = after["metadata"]["annotations"][LAST_APPLIED]
    assert json.loads(note)["spec"]["replicas"] == 3
    owners = {
        e["manager"]
        for e in after["metadata"]["managedFields"]
        if LAST_APPLIED_FIELD in e["fieldsV1"].get("f:metadata", {}).get("f:annotations", {})
    }
    assert owners == {"kubectl-last-applied"}
    assert after["spec"]["replicas"] == 3
    # The next client-side apply still works from that annotation.
    k("apply", "-f", "-", input=manifest)
    assert get(k, "deployment", "csa")["spec"]["replicas"] == 2


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
LAST_APPLIED_FIELD = "f:" + LAST_APPLIED
