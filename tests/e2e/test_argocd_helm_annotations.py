"""An Argo CD Application over plain manifests carrying Helm's hook annotations (the
shape of Argo CD's `helm-hooks` example, written here): Argo CD runs them as hooks, so
gitkrm does too: `generateName` Jobs as PreSync hooks, a `post-install` one after the
sync, and `helm.sh/hook-weight` as the wave."""

from __future__ import annotations

from pathlib import Path

from gitkrm.krm import GVK
from tests.e2e.argocd_apps import application, write_bootstrap
from tests.e2e.e2e_support import reading, run_bootstrap
from tests.source.source_gitrepo import RemoteRepo

JOBS = GVK(group="batch", version="v1", kind="Job")


def job(name: str, hook: str, weight: int, *, generate: bool = False) -> str:
    named = f"generateName: {name}-" if generate else f"name: {name}"
    return f"""\
apiVersion: batch/v1
kind: Job
metadata:
  {named}
  annotations:
    helm.sh/hook: {hook}
    helm.sh/hook-weight: "{weight}"
    helm.sh/hook-delete-policy: before-hook-creation
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: {name}, image: example.test/{name}:1, command: [sleep, "1"]}}]
"""


async def test_helm_hook_annotations_on_plain_manifests_run_as_argo_cd_hooks(
    repo: RemoteRepo, state: Path
) -> None:
    write_bootstrap(repo)
    repo.write("apps/hooks.yaml", application("hooks", repo.url, "hooks", dest="hooks"))
    repo.write(
        "hooks/manifests.yaml",
        "---\n".join([
            job("upgrade-sql-schema", "pre-install", -2, generate=True),
            job("maint-page-up", "pre-install", -1),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frontend\n"
            "  annotations: {helm.sh/hook-weight: '2'}\ndata: {a: '1'}\n",
            job("maint-page-down", "post-install", 1),
            job("helm-test", "test", 0),
        ]),
    )  # fmt: skip
    repo.commit("helm hooks")
    repo.push()
    res = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert res.returncode == 0, res.stdout + res.stderr
    async with reading(state) as store:
        jobs = (await store.list(JOBS, namespace="hooks"))["items"]
    names = sorted(j["metadata"]["name"] for j in jobs)
    assert len(names) == 3, names  # the `test` hook never runs
    assert names[0:2] == ["maint-page-down", "maint-page-up"]
    assert names[2].startswith("upgrade-sql-schema-")
    phases = {j["metadata"]["name"][:14]: j["metadata"]["annotations"] for j in jobs}
    assert phases["maint-page-dow"]["argocd.argoproj.io/hook"] == "PostSync"
    assert phases["upgrade-sql-sc"]["argocd.argoproj.io/sync-wave"] == "-2"
    by_name = {j["metadata"]["name"]: j for j in jobs}
    started = {n: j["metadata"]["creationTimestamp"] for n, j in by_name.items()}
    # PreSync hooks, wave by wave, before the PostSync one
    assert started[names[2]] <= started["maint-page-up"] <= started["maint-page-down"]
