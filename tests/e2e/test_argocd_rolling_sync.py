"""An ApplicationSet with a RollingSync strategy through the CLI: the Application of the
`prod` step is synced only once the `dev` step's Application is Synced and Healthy. While
dev's Deployment never becomes available, prod's objects are not applied; once it does
(a fix committed), they are."""

from __future__ import annotations

from pathlib import Path

from gitkrm.krm import ObjectRef
from tests.e2e.argocd_apps import ARGOCD, application_set
from tests.e2e.e2e_support import cm_ref, read_each, run_bootstrap
from tests.e2e.manifests import configmap, deployment, namespace
from tests.source.source_gitrepo import RemoteRepo

STEPS = [
    {"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev"]}]},
    {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
]


def write(repo: RemoteRepo, *, dev_ready: bool) -> None:
    elements = {"list": {"elements": [{"env": "dev"}, {"env": "prod"}]}}
    repo.write("bootstrap/appset.yaml", application_set(
        "envs", elements, app_name="web-{{env}}", repo_url=repo.url, path="envs/{{env}}",
        destination={}, sync_policy={"automated": {"prune": True}},
        templatePatch="metadata: {labels: {env: '{{env}}'}}",
        strategy={"type": "RollingSync", "rollingSync": {"steps": STEPS}},
    ))  # fmt: skip
    annotations = {} if dev_ready else {"gitkrm.io/simulate": "pending"}
    repo.write("envs/dev/ns.yaml", namespace("dev"))
    repo.write("envs/dev/web.yaml", deployment(
        "web", namespace="dev", replicas=1, image="example.test/web:1",
        template_annotations=annotations,
    ))  # fmt: skip
    repo.write("envs/prod/cm.yaml", configmap("web-settings", {"env": "prod"}))
    repo.commit(f"dev {'ready' if dev_ready else 'never available'}")
    repo.push()


def app_ref(name: str) -> ObjectRef:
    return ObjectRef(group="argoproj.io", kind="Application", name=name, namespace=ARGOCD)


async def test_a_later_step_waits_for_the_step_before_to_be_healthy(
    repo: RemoteRepo, state: Path
) -> None:
    write(repo, dev_ready=False)
    res = run_bootstrap(repo.url, state, "--wait", "--timeout", "15s")
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    dev, prod, settings = await read_each(state, app_ref("web-dev"), app_ref("web-prod"),
                                          cm_ref("web-settings"))  # fmt: skip
    assert dev is not None
    assert prod is not None, out
    assert prod["metadata"]["annotations"]["gitkrm.io/rolling-sync-after"] == "web-dev"
    assert settings is None, "the prod step was synced before dev was healthy"

    write(repo, dev_ready=True)
    res = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert res.returncode == 0, res.stdout + res.stderr
    [settings] = await read_each(state, cm_ref("web-settings"))
    assert settings is not None
