"""A Flux repository of HelmReleases synced by the CLI with `--interpret flux --wait`: charts
from the loopback HTTP chart repository, the loopback OCI registry and the repository
itself; values from a ConfigMap and a Secret (masked); dependsOn; a post-renderer patch; a
chart version bump in Git; `kubectl get helmreleases` reading Ready as with Flux."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from gitkrm.krm import GVK, Obj
from tests.e2e.e2e_support import api_of, gitkrm, object_ref, read_objects
from tests.e2e.flux_helm_repo import SECRET_VALUE, webapp, write_flux_repo
from tests.source.source_gitrepo import RemoteRepo
from tests.support.chartrepo import ChartRepo, chart_repo
from tests.support.registry import Registry, oci_registry

__all__ = ["chart_repo", "oci_registry"]  # fixtures
PASSWORD = "chart-repo-pw-0451"
HR = GVK(group="helm.toolkit.fluxcd.io", version="v2", kind="HelmRelease")


def release(state: Path, name: str, ns: str) -> dict[str, Any]:
    (obj,) = read_objects(state, object_ref("HelmRelease", name, ns, HR.group))
    return obj


def ready(obj: Obj) -> tuple[str, str]:
    c = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
    return c["status"], c["reason"]


def test_a_flux_repository_of_helmreleases(
    tmp_path: Path, chart_repo: ChartRepo, oci_registry: Registry
) -> None:
    from tests.e2e.flux_helm_repo import publish

    publish(chart_repo, oci_registry.url, tmp_path / "pkg")
    chart_repo.credentials = ("reader", PASSWORD)  # the HelmRepository's secretRef
    repo = RemoteRepo(tmp_path / "git")
    write_flux_repo(
        repo, charts_url=chart_repo.url, oci_url=oci_registry.url,
        credentials=("reader", PASSWORD),
    )  # fmt: skip
    state = tmp_path / "state"
    run = ("run", "--repo", repo.url, "--path", "deploy", "--once", "--wait", "--timeout", "2m",
           "--interpret", "flux", "--state", str(state))  # fmt: skip
    started = time.monotonic()
    done = gitkrm(*run, cwd=tmp_path)
    first = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "all " in done.stdout
    assert "are Current" in done.stdout
    # dependsOn: the cache release synced before the app that needs it
    log = done.stderr
    assert log.index("sync source=flux-system-cache-") < log.index("sync source=apps-webapp-")

    deploy, cm, db, svc, _tools, _ns = read_objects(
        state,
        object_ref("Deployment", "webapp", "apps", "apps"),
        object_ref("ConfigMap", "webapp-config", "apps"),
        object_ref("Secret", "webapp-db", "apps"),
        object_ref("Service", "infra-cache", "infra"),
        object_ref("Service", "tools", "apps"),  # a chart in the Git repository
        object_ref("Namespace", "infra", None),  # install.createNamespace
    )
    assert deploy["spec"]["replicas"] == 2  # spec.values over the ConfigMap's
    assert deploy["metadata"]["labels"]["post-rendered"] == "yes"  # postRenderers
    assert deploy["metadata"]["labels"]["helm.sh/chart"] == "webapp-1.0.0"
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "example.com/webapp:3.1"  # a Secret key at targetPath
    assert cm["data"]["message"] == "from-configmap"
    assert db["data"]["password"]  # the Secret's values reached the chart
    assert svc["metadata"]["annotations"]["size"] == "256Mi"

    hr = release(state, "webapp", "apps")
    assert ready(hr) == ("True", "InstallSucceeded")
    assert hr["status"]["lastAttemptedRevision"] == "1.0.0"
    (entry,) = hr["status"]["history"]
    assert (entry["chartName"], entry["chartVersion"], entry["status"]) == (
        "webapp",
        "1.0.0",
        "deployed",
    )
    assert entry["digest"].startswith("sha256:")
    tools_hr = release(state, "tools", "flux-system")
    assert tools_hr["status"]["lastAttemptedRevision"] == "0.1.0"  # the Git chart's version
    assert tools_hr["status"]["history"][0]["chartName"] == "cache"
    unhonoured = next(c for c in tools_hr["status"]["conditions"] if c["type"] == "NotHonoured")
    assert unhonoured["message"].startswith("spec.test: gitkrm keeps no Helm release storage")
    assert "spec.test" in done.stderr  # and in the log

    # The Secret's values are masked wherever gitkrm shows them.
    assert SECRET_VALUE not in done.stdout + done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    children = json.loads(gitkrm("get", "gitsources", "-n", "gitkrm-system", "-o", "json",
                                 "--state", str(state), cwd=tmp_path).stdout)["items"]  # fmt: skip
    child = next(c for c in children if c["metadata"]["name"].startswith("apps-webapp-"))
    assert child["spec"]["helm"]["values"]["database"]["password"] == "***"
    assert SECRET_VALUE not in json.dumps(children)
    assert PASSWORD not in json.dumps(children)

    # Nothing changed: a re-sync applies nothing.
    started = time.monotonic()
    again = gitkrm(*run, cwd=tmp_path)
    resync = time.monotonic() - started
    assert again.returncode == 0, again.stderr
    assert " created" not in again.stdout.replace("0 created", "")
    assert len(release(state, "tools", "flux-system")["status"]["history"]) == 1

    # A chart version bump in Git: an upgrade.
    repo.write("deploy/apps/webapp.yaml", webapp("1.1.0"))
    repo.commit("webapp 1.1.0")
    repo.push()
    bumped = gitkrm(*run, cwd=tmp_path)
    assert bumped.returncode == 0, bumped.stderr
    (deploy, cm) = read_objects(
        state,
        object_ref("Deployment", "webapp", "apps", "apps"),
        object_ref("ConfigMap", "webapp-config", "apps"),
    )
    assert deploy["metadata"]["labels"]["helm.sh/chart"] == "webapp-1.1.0"
    assert cm["data"]["installing"] == "false"  # .Release.IsUpgrade
    hr = release(state, "webapp", "apps")
    assert ready(hr) == ("True", "UpgradeSucceeded")
    assert [(h["chartVersion"], h["version"], h["status"]) for h in hr["status"]["history"]] == [
        ("1.1.0", 2, "deployed"),
        ("1.0.0", 1, "superseded"),
    ]

    with api_of(state, tmp_path) as kubectl:
        table = kubectl.run("get", "helmreleases", "-A").stdout
        sources = kubectl.run("get", "helmrepositories,ocirepositories", "-A", "-o", "json")
    # Each chart source Ready with the artifact its HelmRelease fetched, as source-controller
    # would write it (kubectl's READY column).
    items = json.loads(sources.stdout)["items"]
    assert items, sources.stdout
    for item in items:
        ready_cond = next(c for c in item["status"]["conditions"] if c["type"] == "Ready")
        assert ready_cond["status"] == "True", item["metadata"]["name"]
        assert "@sha256:" in item["status"]["artifact"]["revision"]
    lines = table.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "AGE", "READY", "STATUS"]
    row = next(line for line in lines if line.split()[:2] == ["apps", "webapp"])
    assert "True" in row.split()
    assert "Helm upgrade succeeded for release apps/webapp.v2 with chart webapp@1.1.0" in row
    print(f"flux HelmReleases: first sync {first:.2f}s, re-sync {resync:.2f}s (CLI, wall)")
