"""GitOps on the cluster target: `gitkrm run --once --kubeconfig` against a `gitkrm serve`
with TLS and a token (see cluster_support): first sync (and --wait on the cluster's own
controllers), a change, drift set back, prune, `git revert`, an object that belongs to
nobody; a cluster without the GitSource CRD; setup errors as one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.cli.main import main
from gitkrm.krm import GVK, ObjectRef
from tests.e2e.cluster_support import Cluster, lease_ref, run_once
from tests.e2e.e2e_support import gitkrm
from tests.e2e.manifests import configmap, deployment, namespace
from tests.report.report_helpers import read_note, read_status
from tests.source.source_gitrepo import RemoteRepo, git

CM = GVK(group="", version="v1", kind="ConfigMap")
CRD = ObjectRef(
    group="apiextensions.k8s.io", kind="CustomResourceDefinition", name="gitsources.gitkrm.io"
)


def cm(name: str, namespace: str = "shop") -> ObjectRef:
    return ObjectRef(group="", kind="ConfigMap", name=name, namespace=namespace)


WEB = ObjectRef(group="apps", kind="Deployment", name="web", namespace="shop")
GITSOURCE = ObjectRef(
    group="gitkrm.io", kind="GitSource", name="default", namespace="gitkrm-system"
)


async def test_sync_change_drift_prune_revert_and_unowned(repo: RemoteRepo, tmp_path: Path) -> None:
    state = tmp_path / "state"
    repo.write("ns.yaml", namespace("shop"))
    repo.write("settings.yaml", configmap("settings", {"color": "blue"}, namespace="shop"))
    repo.write("web.yaml", deployment("web", namespace="shop", replicas=1, image="nginx:1.25"))
    first = repo.commit("first")
    repo.push()
    with Cluster(tmp_path / "cluster") as cluster:

        def sync(*extra: str) -> tuple[int, str]:
            res = run_once("--repo", repo.url, *extra, cluster=cluster, state=state, cwd=tmp_path)
            return res.returncode, res.stdout + res.stderr

        # First sync; --wait waits on the cluster's own controllers (the agent runs none).
        code, out = sync("--wait", "--timeout", "30s")
        assert code == 0, out
        assert f"default: synced revision {first[:12]}: 3 created" in out
        assert "all 3 object(s) are Current" in out
        settings = cluster.get(cm("settings"))
        assert settings is not None
        assert settings["metadata"]["labels"]["gitkrm.io/source"] == "default"
        assert settings["metadata"]["annotations"]["gitkrm.io/revision"] == first
        web = cluster.get(WEB)
        assert web is not None
        assert web["status"]["readyReplicas"] == 1  # the cluster's controllers did that
        status = (cluster.get(GITSOURCE) or {}).get("status") or {}
        assert status["lastSyncedRevision"] == first
        assert status["health"]["status"] == "Current"
        inventory = cluster.get(cm("gitkrm-inventory-default", "gitkrm-system"))
        assert inventory is not None
        assert set(inventory["data"]) == {
            "_shop__Namespace",
            "shop_settings__ConfigMap",
            "shop_web_apps_Deployment",
        }
        lease = cluster.get(lease_ref("e2e"))
        assert lease is not None
        assert lease["spec"]["holderIdentity"] == ""  # released at exit
        # Reports into Git as on the embedded target: the note and the status file.
        note = read_note(repo.bare, "e2e", first)
        assert note is not None
        assert note["sources"]["default"]["result"] == "Succeeded"
        assert note["sources"]["default"]["counts"]["created"] == 3
        status_file = read_status(repo.bare, "e2e")
        assert status_file is not None
        assert len(status_file["sources"]["default"]["objects"]) == 3

        # A change: only the ConfigMap is written.
        repo.write("settings.yaml", configmap("settings", {"color": "green"}, namespace="shop"))
        repo.commit("green")
        repo.push()
        code, out = sync()
        assert code == 0, out
        assert "1 configured" in out
        assert (cluster.get(cm("settings")) or {})["data"] == {"color": "green"}
        web2 = cluster.get(WEB) or {}
        assert web2["metadata"]["annotations"]["gitkrm.io/revision"] == first

        # Drift through the API: Git's fields are set back, others' fields are kept.
        client = await cluster.client()
        try:
            await client.patch(
                cm("settings"),
                {"metadata": {"labels": {"team": "ops"}}, "data": {"color": "red"}},
                "merge",
            )
        finally:
            await client.close()
        assert gitkrm(
            "diff", "--repo", repo.url, "--kubeconfig", str(cluster.kubeconfig),
            "--state", str(state), "--agent-name", "e2e", cwd=tmp_path,
        ).returncode == 1  # fmt: skip
        code, out = sync()
        assert code == 0, out
        settings = cluster.get(cm("settings")) or {}
        assert settings["data"] == {"color": "green"}
        assert settings["metadata"]["labels"]["team"] == "ops"

        # Prune, then git revert brings it back.
        repo.remove("settings.yaml")
        repo.commit("no settings")
        repo.push()
        code, out = sync()
        assert code == 0, out
        assert "1 pruned" in out
        assert cluster.get(cm("settings")) is None
        git("revert", "--no-edit", "HEAD", cwd=repo.work)
        reverted = repo.head()
        repo.push()
        code, out = sync()
        assert code == 0, out
        assert "1 created" in out
        assert (cluster.get(cm("settings")) or {})["data"] == {"color": "green"}
        status = (cluster.get(GITSOURCE) or {}).get("status") or {}
        assert status["lastSyncedRevision"] == reverted

        # An object that exists and belongs to nobody: refused, named, untouched.
        client = await cluster.client()
        try:
            await client.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "taken", "namespace": "shop"},
                    "data": {"owner": "someone"},
                }
            )
        finally:
            await client.close()
        repo.write("taken.yaml", configmap("taken", {"owner": "git"}, namespace="shop"))
        repo.commit("taken")
        repo.push()
        code, out = sync()
        assert code == 1, out
        assert "1 refused" in out
        assert "taken.yaml" in out
        assert "shop/taken" in out
        taken = cluster.get(cm("taken")) or {}
        assert taken["data"] == {"owner": "someone"}
        assert "labels" not in taken["metadata"]


async def test_without_the_gitsource_crd_sources_sync_and_no_crd_is_installed(
    repo: RemoteRepo, tmp_path: Path
) -> None:
    repo.write("a.yaml", configmap("a", {"v": "1"}, namespace="default"))
    repo.commit("a")
    repo.push()
    with Cluster(tmp_path / "cluster", gitsource_crd=False, controllers=False) as cluster:
        res = run_once("--repo", repo.url, cluster=cluster, state=tmp_path / "s", cwd=tmp_path)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "1 created" in res.stdout
        assert res.stderr.count("no GitSource kind") == 1  # said once
        assert cluster.get(cm("a", "default")) is not None
        assert cluster.get(CRD) is None


def test_setup_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In-process (the CLI's own `main`): the same line a terminal shows, without the cost
    of starting a process per case."""
    (tmp_path / "m").mkdir()
    with Cluster(tmp_path / "cluster", gitsource_crd=False, controllers=False) as cluster:
        kubeconfig = str(cluster.kubeconfig)
        cases = [
            (("diff", "--kubeconfig", kubeconfig, "--context", "nope"), "no context named"),
            (("run", "--once", "--kubeconfig", str(tmp_path / "missing")), "no such file"),
        ]
        for flags, message in cases:
            code = main([*flags, "--repo", str(tmp_path / "m"), "--state", str(tmp_path / "s")])
            err = capsys.readouterr().err
            assert code == 2, err
            assert err.startswith("gitkrm: error: ")
            assert message in err
            assert err.count("\n") == 1
