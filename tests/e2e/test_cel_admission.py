"""`gitkrm run --once` with CEL: a ValidatingAdmissionPolicy in the repository (or already in
the store) refuses a revision whole, naming file, line, object and the policy's message; a
CRD's x-kubernetes-validations refuse a custom resource the same way; nothing is written."""

from __future__ import annotations

from pathlib import Path

import yaml

from gitkrm.krm import GVK, ObjectRef
from tests.e2e.e2e_support import gitkrm, names, reading
from tests.e2e.manifests import configmap, deployment, namespace
from tests.source.source_gitrepo import RemoteRepo
from tests.support.builders import crd

POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  variables:
  - {name: limit, expression: "int(params.data.maxReplicas)"}
  validations:
  - expression: object.spec.replicas <= variables.limit
    messageExpression: "'replicas must be at most ' + string(variables.limit)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit-shop}
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef: {name: limits, namespace: shop, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector: {matchLabels: {team: shop}}
"""

DEPLOYMENTS = GVK(group="apps", version="v1", kind="Deployment")


def web_like(name: str, replicas: int) -> str:
    return deployment(name, namespace="shop", replicas=replicas, image="nginx:1.25")


def _shop(repo: RemoteRepo) -> None:
    repo.write("ns.yaml", namespace("shop") + "  labels: {team: shop}\n")
    repo.write("limits.yaml", configmap("limits", {"maxReplicas": "3"}, namespace="shop"))
    repo.write("policy.yaml", POLICY)


async def test_a_policy_in_the_revision_refuses_it_whole(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    _shop(repo)
    repo.write("web.yaml", web_like("web", 2))
    repo.write("big.yaml", web_like("big", 9))
    repo.commit("a deployment over the limit")
    repo.push()
    res = gitkrm("run", "--repo", repo.url, "--state", str(state), "--once", cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    out = res.stdout + res.stderr
    assert (
        "big.yaml:1: Deployment shop/big: ValidatingAdmissionPolicy 'replica-limit' with "
        "binding 'replica-limit-shop' denied request: replicas must be at most 3" in out
    )
    assert "shop/web" not in out
    diff = gitkrm("diff", "--repo", repo.url, "--state", str(state), cwd=tmp_path)
    assert diff.returncode == 2, diff.stdout + diff.stderr
    assert "big.yaml:1: Deployment shop/big: ValidatingAdmissionPolicy" in diff.stderr
    async with reading(state) as store:
        assert await names(store, DEPLOYMENTS) == set()  # nothing half-applied


async def test_the_stored_policy_keeps_refusing_a_later_revision(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    _shop(repo)
    repo.write("web.yaml", web_like("web", 2))
    repo.commit("within the limit")
    repo.push()
    res = gitkrm("run", "--repo", repo.url, "--state", str(state), "--once", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    repo.write("web.yaml", web_like("web", 5))
    repo.commit("over the limit")
    repo.push()
    res = gitkrm("run", "--repo", repo.url, "--state", str(state), "--once", cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "web.yaml:1: Deployment shop/web: ValidatingAdmissionPolicy" in res.stdout + res.stderr
    async with reading(state) as store:
        web = await store.get(
            ObjectRef(group="apps", kind="Deployment", name="web", namespace="shop")
        )
    assert web["spec"]["replicas"] == 2


CRD = yaml.safe_dump(
    crd(
        "Scaler",
        "cel.example.com",
        status_subresource=False,
        schema={
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-validations": [
                        {"rule": "self.min <= self.max", "message": "min must not exceed max"}
                    ],
                    "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
                }
            },
        },
    ),
    sort_keys=False,
)


async def test_a_crd_rule_refuses_a_custom_resource_in_the_revision(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    repo.write("ns.yaml", namespace("shop"))
    repo.write("crd.yaml", CRD)
    repo.write(
        "scaler.yaml",
        "apiVersion: cel.example.com/v1\nkind: Scaler\n"
        "metadata: {name: s, namespace: shop}\nspec: {min: 4, max: 2}\n",
    )
    repo.commit("a scaler against its CRD's rule")
    repo.push()
    res = gitkrm("run", "--repo", repo.url, "--state", str(state), "--once", cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert 'spec: Invalid value: "object": min must not exceed max' in res.stdout + res.stderr
    assert "scaler.yaml" in res.stdout + res.stderr
