"""A repository in Flux's layout synced with `--interpret flux` through the CLI: the whole
tree with `--wait` (dependsOn order, the overlay and substitution of `apps`, a
Kustomization over a second bare repository), an edit in a leaf, a leaf Kustomization
removed (its objects pruned, no hang), and `kubectl get kustomizations,gitrepositories`
against the embedded API showing them as kustomize-controller would."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gitkrm.krm import ObjectRef
from tests.e2e.e2e_support import gitkrm, read_object
from tests.e2e.flux_repo import APP, extras, fleet, https_remote, second_repository
from tests.server.conftest import Kubectl, gitkrm_serve, kubectl_path

pytestmark = pytest.mark.usefixtures("_kustomize")


@pytest.fixture
def _kustomize() -> None:
    from gitkrm.sync import kustomize

    kustomize.command()  # skips nothing: kubectl or kustomize must be on PATH


DEPLOY = ObjectRef(group="apps", kind="Deployment", name="dev-podinfo", namespace="podinfo")
EXTRA_SETTINGS = ObjectRef(
    group="", kind="ConfigMap", name="extra-settings", namespace="flux-system"
)
SETTINGS = ObjectRef(group="", kind="ConfigMap", name="dev-podinfo-settings", namespace="podinfo")


def ks(name: str) -> ObjectRef:
    return ObjectRef(group="kustomize.toolkit.fluxcd.io", kind="Kustomization", name=name,
                     namespace="flux-system")  # fmt: skip


def ready(obj: dict[str, Any] | None) -> tuple[str, str]:
    assert obj is not None
    for c in obj.get("status", {}).get("conditions", []):
        if c["type"] == "Ready":
            return c["status"], c["message"]
    raise AssertionError(f"no Ready condition: {obj.get('status')}")


def sync(root: Path, url: str, state: Path) -> subprocess.CompletedProcess[str]:
    return gitkrm("run", "--repo", url, "--path", "clusters/dev", "--interpret", "flux",
                  "--once", "--wait", "--timeout", "60s", "--state", str(state),
                  cwd=root, timeout=120)  # fmt: skip


async def test_a_flux_repository_syncs_as_a_tree(tmp_path: Path) -> None:
    second = second_repository(tmp_path)
    repo = fleet(tmp_path, second=second)
    state = tmp_path / "state"
    done = sync(tmp_path, repo.url, state)
    assert done.returncode == 0, done.stderr
    assert "are Current" in done.stdout
    # dependsOn: apps syncs only after infrastructure (its namespace) is Ready.
    log = done.stderr
    assert log.index("sync source=flux-system-infrastructure-") < log.index(
        "sync source=flux-system-apps-"
    )
    head = repo.commit("nothing")  # the revision the statuses name, once re-synced below
    done = sync(tmp_path, repo.url, state)
    assert done.returncode == 0, done.stderr
    for name in ("flux-system", "infrastructure", "apps"):
        status, message = ready(await read_object(state, ks(name)))
        assert (status, message) == ("True", f"Applied revision: main@sha1:{head}")
    other = await read_object(state, ks("extras"))
    assert ready(other)[0] == "True"
    assert other is not None
    assert other["status"]["lastAppliedRevision"].startswith("main@sha1:")
    assert other["status"]["inventory"]["entries"] == [
        {"id": "flux-system_extra-settings__ConfigMap", "v": "v1"}
    ]
    # apps: targetNamespace, namePrefix (its reference fixed), images, patches, postBuild.
    deploy = await read_object(state, DEPLOY)
    assert deploy is not None
    assert deploy["spec"]["replicas"] == 2
    pod = deploy["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "ghcr.io/example/podinfo:6.7.1"
    assert pod["containers"][0]["envFrom"] == [{"configMapRef": {"name": "dev-podinfo-settings"}}]
    settings = await read_object(state, SETTINGS)
    assert settings is not None
    assert settings["data"] == {"environment": "dev", "greeting": "hello"}
    # What gitkrm does not honour is on the object (infrastructure sets serviceAccountName).
    infra = await read_object(state, ks("infrastructure"))
    assert infra is not None
    conds = {c["type"]: c for c in infra["status"]["conditions"]}
    assert "spec.serviceAccountName" in conds["NotHonoured"]["message"]
    assert "spec.retryInterval" not in conds["NotHonoured"]["message"]  # honoured
    assert conds["Healthy"]["status"] == "True"  # it waits for health

    # An edit in a leaf.
    repo.write("apps/dev/podinfo.yaml", APP.replace("greeting: hello", "greeting: hi"))
    edited = repo.commit("edit a leaf")
    done = sync(tmp_path, repo.url, state)
    assert done.returncode == 0, done.stderr
    settings = await read_object(state, SETTINGS)
    assert settings is not None
    assert settings["data"]["greeting"] == "hi"
    apps = await read_object(state, ks("apps"))
    assert apps is not None
    assert apps["status"]["lastAppliedRevision"] == f"main@sha1:{edited}"

    # The Kustomization over the second repository edited, that repository unchanged: its
    # child syncs again with the new overlay (the old name pruned).
    repo.write("clusters/dev/extras.yaml", extras(second.url, namePrefix="x-"))
    repo.commit("prefix the extras")
    done = sync(tmp_path, repo.url, state)
    assert done.returncode == 0, done.stderr
    renamed = ObjectRef(
        group="", kind="ConfigMap", name="x-extra-settings", namespace="flux-system"
    )
    assert await read_object(state, renamed) is not None
    assert await read_object(state, EXTRA_SETTINGS) is None

    # A leaf Kustomization removed: its objects are pruned and the sync ends.
    repo.remove("clusters/dev/extras.yaml")
    repo.commit("remove extras")
    done = sync(tmp_path, repo.url, state)
    assert done.returncode == 0, done.stderr
    assert await read_object(state, ks("extras")) is None
    assert await read_object(state, renamed) is None


def test_kubectl_reads_kustomizations_as_with_kustomize_controller(tmp_path: Path) -> None:
    """A repository without Flux's CRDs: gitkrm registers its own (Flux's columns)."""
    repo = fleet(tmp_path, components=False)
    state = tmp_path / "state"
    done = sync(tmp_path, repo.url, state)
    assert done.returncode == 0, done.stderr
    binary = kubectl_path()
    with gitkrm_serve(state, tmp_path / "serve.log"):
        kubectl = Kubectl(binary, state / "kubeconfig", tmp_path / "home")
        table = kubectl("get", "kustomizations", "-A")
        lines = table.splitlines()
        assert lines[0].split() == ["NAMESPACE", "NAME", "AGE", "READY", "STATUS"]
        rows = {line.split()[1]: line.split() for line in lines[1:]}
        assert set(rows) == {"flux-system", "infrastructure", "apps"}
        assert all(r[3] == "True" and r[4:6] == ["Applied", "revision:"] for r in rows.values())
        repos = kubectl("get", "gitrepositories", "-n", "flux-system").splitlines()
        assert repos[0].split() == ["NAME", "URL", "AGE", "READY", "STATUS"]
        assert repos[1].split()[:2] == ["flux-system", f"file://{repo.bare}"]
        # Ready as source-controller writes it: the artifact the Kustomizations fetched.
        assert repos[1].split()[3:5] == ["True", "stored"], repos[1]
        gitrepo = json.loads(
            kubectl("get", "gitrepositories", "flux-system", "-n", "flux-system", "-o", "json")
        )
        assert gitrepo["status"]["artifact"]["revision"].startswith("main@sha1:")
        short = json.loads(kubectl("get", "ks", "apps", "-n", "flux-system", "-o", "json"))
        assert short["status"]["lastAppliedRevision"].startswith("main@sha1:")


USER = "robot"
TOKEN = "tok-flux-7d3e91SECRET"


def test_a_kustomization_over_a_repository_behind_basic_auth(tmp_path: Path) -> None:
    """The GitRepository's secretRef (username, password, ca.crt) reaches git; the token is
    never shown, and the private files holding it are gone when the process ends."""
    second = second_repository(tmp_path)
    served = https_remote(second.bare.parent, secret="extras-auth", username=USER, password=TOKEN)
    with served as (srv, secret):
        repo = fleet(tmp_path, files={
            "clusters/dev/extras.yaml": extras(srv.url("remote.git"), secret="extras-auth"),
            "clusters/dev/extras-auth.yaml": secret,
        })  # fmt: skip
        state, tmp = tmp_path / "state", tmp_path / "tmp"
        tmp.mkdir()
        done = gitkrm("run", "--repo", repo.url, "--path", "clusters/dev", "--interpret",
                      "flux", "--once", "--wait", "--timeout", "60s", "--state", str(state),
                      cwd=tmp_path, env={"TMPDIR": str(tmp)}, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert any(h.startswith("Basic ") for h in srv.auth_headers)
    assert TOKEN not in done.stdout + done.stderr
    assert list(tmp.iterdir()) == []  # the private credential files were removed
    configmap = asyncio.run(read_object(state, EXTRA_SETTINGS))
    assert configmap is not None
    assert configmap["data"] == {"from": "second-repository"}
