"""A Git repository shipping a namespace with a LimitRange and a ResourceQuota, as Flux and
Argo CD repositories do: `gitkrm run --once --wait` syncs it, the pods of its Deployment get
the LimitRange's defaults, the quota refuses the pod too many (the wait names why), and
kubectl against the store sees what a 1.33 cluster would show: defaulted pods, the quota's
usage, the ReplicaSet's FailedCreate, and kube-apiserver's 403 for a pod above the max."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.e2e_support import api_of, gitkrm
from tests.e2e.manifests import deployment, namespace
from tests.source.source_gitrepo import RemoteRepo

LIMITS = """\
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: shop}
spec:
  limits:
  - type: Container
    default: {cpu: 250m, memory: 128Mi}
    defaultRequest: {cpu: 100m, memory: 64Mi}
    max: {cpu: 500m}
"""
QUOTA = """\
apiVersion: v1
kind: ResourceQuota
metadata: {name: compute, namespace: shop}
spec:
  hard: {pods: "2", limits.cpu: "1", requests.memory: 1Gi}
"""
TOO_BIG = """\
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: shop}
spec:
  containers:
  - {name: web, image: "nginx:1.27", resources: {limits: {cpu: "1"}}}
"""


async def test_limits_and_quota_of_a_synced_namespace(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    repo.write("ns.yaml", namespace("shop"))
    repo.write("limits.yaml", LIMITS)
    repo.write("quota.yaml", QUOTA)
    repo.write("web.yaml", deployment("web", namespace="shop", replicas=3, image="nginx:1.27"))
    repo.commit("shop with limits and a quota")
    repo.push()
    res = gitkrm(
        "run", "--repo", repo.url, "--state", str(state), "--once", "--wait", "--timeout", "8s",
        cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 1, res.stdout + res.stderr
    assert "timed out after 8s" in res.stdout
    # The wait says what a user can act on: the Deployment's pods are refused by the quota.
    line = next(x for x in res.stdout.splitlines() if "shop/web: InProgress" in x)
    assert "exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2" in line

    with api_of(state, tmp_path) as kubectl:
        pods = json.loads(kubectl("get", "pods", "-n", "shop", "-o", "json"))["items"]
        assert len(pods) == 2
        for p in pods:
            (c,) = p["spec"]["containers"]
            assert c["resources"] == {
                "limits": {"cpu": "250m", "memory": "128Mi"},
                "requests": {"cpu": "100m", "memory": "64Mi"},
            }
            assert p["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
                "LimitRanger plugin set: cpu, memory request for container main; "
                "cpu, memory limit for container main"
            )
        # The Deployment's template in the store is as in Git: LimitRanger mutates pods only.
        d = json.loads(kubectl("get", "deployment", "web", "-n", "shop", "-o", "json"))
        assert (
            "resources" not in d["spec"]["template"]["spec"]["containers"][0]
            or not (d["spec"]["template"]["spec"]["containers"][0]["resources"])
        )
        q = json.loads(kubectl("get", "resourcequota", "compute", "-n", "shop", "-o", "json"))
        assert q["status"]["hard"] == {"limits.cpu": "1", "pods": "2", "requests.memory": "1Gi"}
        assert q["status"]["used"] == {
            "limits.cpu": "500m",
            "pods": "2",
            "requests.memory": "128Mi",
        }
        (rs,) = json.loads(kubectl("get", "replicasets", "-n", "shop", "-o", "json"))["items"]
        (cond,) = [c for c in rs["status"]["conditions"] if c["type"] == "ReplicaFailure"]
        assert (cond["status"], cond["reason"]) == ("True", "FailedCreate")
        assert "exceeded quota: compute" in cond["message"]

        refused = kubectl.run("create", "-f", "-", input=TOO_BIG, check=False)
        assert refused.returncode == 1
        assert refused.stderr.strip() == (
            'Error from server (Forbidden): error when creating "STDIN": pods "big" is '
            "forbidden: maximum cpu usage per Container is 500m, but limit is 1"
        )
