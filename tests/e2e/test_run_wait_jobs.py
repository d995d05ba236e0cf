"""`gitkrm run --once --wait` on bundles real charts render: Jobs that delete themselves
when done (ingress-nginx's admission Jobs), and the cluster-level GA kinds a metrics-server
bundle ships (APIService)."""

from __future__ import annotations

from pathlib import Path

from gitkrm.krm import ObjectRef
from tests.e2e.e2e_support import get_or_none, gitkrm, gitsource_status, reading
from tests.e2e.manifests import namespace
from tests.schema.test_ga_kinds import DATA
from tests.source.source_gitrepo import RemoteRepo

# The shape of ingress-nginx's rendered admission Jobs (written for this test).
ADMISSION_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: ingress-nginx-admission-{step}
  namespace: ingress-nginx
spec:
  ttlSecondsAfterFinished: 0
  template:
    metadata:
      labels: {{app.kubernetes.io/component: admission-webhook}}
    spec:
      restartPolicy: OnFailure
      containers:
      - name: {step}
        image: registry.k8s.io/ingress-nginx/kube-webhook-certgen:v1.5.2
        args: [{step}, --namespace=ingress-nginx]
"""


# The controller's Deployment: Available only after minReadySeconds, so the wait is still
# running when the Jobs finish and their TTL deletes them.
CONTROLLER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ingress-nginx-controller
  namespace: ingress-nginx
spec:
  replicas: 1
  minReadySeconds: 4
  selector:
    matchLabels: {app: ingress-nginx}
  template:
    metadata:
      labels: {app: ingress-nginx}
    spec:
      containers:
      - name: controller
        image: registry.k8s.io/ingress-nginx/controller:v1.12.1
"""


def _job(name: str) -> ObjectRef:
    return ObjectRef(group="batch", kind="Job", name=name, namespace="ingress-nginx")


def _run_once_wait(
    repo: RemoteRepo, state: Path, cwd: Path, files: dict[str, str], message: str
) -> str:
    """Commit `files`, push, `run --once --wait`; its stdout (exit 0 asserted)."""
    for name, text in files.items():
        repo.write(name, text)
    repo.commit(message)
    repo.push()
    flags = ("--repo", repo.url, "--state", str(state), "--once", "--wait", "--timeout", "30s")
    res = gitkrm("run", *flags, cwd=cwd)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


async def test_jobs_deleted_by_their_ttl_count_as_done(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    files = {
        "ns.yaml": namespace("ingress-nginx"),
        "create.yaml": ADMISSION_JOB.format(step="create"),
        "patch.yaml": ADMISSION_JOB.format(step="patch"),
        "controller.yaml": CONTROLLER,
    }
    out = _run_once_wait(repo, state, tmp_path, files, "admission jobs with a TTL of 0")
    assert "object(s) are Current" in out
    assert "NotFound" not in out
    async with reading(state) as store:
        # The bundled Job controller honoured the TTL: both Jobs ran and are gone.
        assert await get_or_none(store, _job("ingress-nginx-admission-create")) is None
        assert await get_or_none(store, _job("ingress-nginx-admission-patch")) is None
        health = (await gitsource_status(store))["health"]
    assert health == {"status": "Current", "objects": 4, "notCurrent": 0}


async def test_cluster_level_ga_kinds_sync_and_wait(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    files = {"cluster.yaml": (DATA / "cluster-kinds.yaml").read_text()}
    out = _run_once_wait(repo, state, tmp_path, files, "the cluster-level GA kinds")
    assert " 5 created," in out
    listed = gitkrm("get", "apiservices", "--state", str(state), "-o", "name", cwd=tmp_path)
    assert listed.stdout.strip() == "apiservice.apiregistration.k8s.io/v1beta1.metrics.k8s.io"
    again = gitkrm("diff", "--repo", repo.url, "--state", str(state), cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
