"""gitkrm and kpt (cli-utils) on the same cluster: `kpt live init`, `install-resource-group`,
`apply` and `status` work against the gitkrm API server (the ResourceGroup CRD registers),
and gitkrm then syncs its own objects there without touching kpt's (nor its inventory)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitkrm.krm import GVK, ObjectRef
from tests.e2e.cluster_support import Cluster, run_once
from tests.e2e.manifests import configmap
from tests.source.source_gitrepo import RemoteRepo
from tests.support.tools import require_tool

KPT = Path("/usr/lib/google-cloud-sdk/bin/kpt")
RG = GVK(group="kpt.dev", version="v1alpha1", kind="ResourceGroup")
RG_CRD = ObjectRef(
    group="apiextensions.k8s.io", kind="CustomResourceDefinition", name="resourcegroups.kpt.dev"
)


@pytest.fixture(autouse=True)
def _kpt() -> None:
    require_tool("kpt", candidates=[KPT], search_path=False)


def kpt(*args: str, cluster: Cluster, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "HOME": str(cwd)}
    return subprocess.run(
        [str(KPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def cm(name: str) -> ObjectRef:
    return ObjectRef(group="", kind="ConfigMap", name=name, namespace="default")


async def test_kpt_live_and_gitkrm_share_a_cluster(repo: RemoteRepo, tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "cm.yaml").write_text(configmap("kpt-cm", {"by": "kpt"}))
    with Cluster(tmp_path / "cluster", controllers=False) as cluster:

        def ok(*args: str) -> str:
            res = kpt(*args, cluster=cluster, cwd=tmp_path)
            assert res.returncode == 0, f"kpt {' '.join(args)}: {res.stdout}{res.stderr}"
            return res.stdout + res.stderr

        ok("live", "init", str(pkg), "--namespace", "default", "--inventory-id", "kpt-pkg")
        ok("live", "install-resource-group")
        crd = cluster.get(RG_CRD)
        assert crd is not None
        established = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert established["Established"] == "True"
        out = ok("live", "apply", str(pkg))
        assert "apply result: 1 attempted, 1 successful" in out
        assert "is Current" in ok("live", "status", str(pkg))
        groups = cluster.names(RG)
        assert len(groups) == 1
        rg_ref = ObjectRef(
            group="kpt.dev", kind="ResourceGroup", name=next(iter(groups)).split("/")[1],
            namespace="default",
        )  # fmt: skip
        rg = cluster.get(rg_ref) or {}
        assert [r["name"] for r in rg["spec"]["resources"]] == ["kpt-cm"]
        kpt_cm = cluster.get(cm("kpt-cm")) or {}

        # gitkrm syncs other objects into the same namespace; kpt's are not touched.
        repo.write("gk.yaml", configmap("gk-cm", {"by": "gitkrm"}))
        repo.commit("gitkrm's")
        repo.push()
        res = run_once("--repo", repo.url, cluster=cluster, state=tmp_path / "s", cwd=tmp_path)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "1 created, 0 configured, 0 pruned, 0 unchanged" in res.stdout
        assert (cluster.get(cm("gk-cm")) or {})["data"] == {"by": "gitkrm"}
        after = cluster.get(cm("kpt-cm")) or {}
        assert after["metadata"]["resourceVersion"] == kpt_cm["metadata"]["resourceVersion"]
        assert "gitkrm.io/source" not in (after["metadata"].get("labels") or {})
        rg_after = cluster.get(rg_ref) or {}
        assert rg_after["metadata"]["resourceVersion"] == rg["metadata"]["resourceVersion"]
        inventory = cluster.get(
            ObjectRef(
                group="", kind="ConfigMap", name="gitkrm-inventory-default",
                namespace="gitkrm-system",
            )
        )  # fmt: skip
        assert set((inventory or {})["data"]) == {"default_gk-cm__ConfigMap"}

        # And kpt still sees its package as applied and Current.
        assert "is Current" in ok("live", "status", str(pkg))
        out = ok("live", "apply", str(pkg))
        assert "0 failed" in out
        assert cluster.get(cm("gk-cm")) is not None  # kpt's apply prunes nothing of gitkrm's
