"""A repository in the shape of Flux's example since 2.7 (an ArtifactGenerator splitting
the repository into ExternalArtifacts, Kustomizations over them, placeholder bootstrap
files) synced with `--interpret flux` through the CLI: the whole tree with `--wait`,
source-watcher's statuses, a commit outside an artifact's globs that re-syncs nothing
(in a long-lived agent), one inside that re-syncs its child only, and bad input."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gitkrm.krm import ObjectRef
from tests.e2e.e2e_support import AgentProcess, gitkrm, read_object, wait_for
from tests.e2e.flux_artifacts_repo import GENERATOR, infrastructure, monorepo, values
from tests.support.net import free_port

pytestmark = pytest.mark.usefixtures("_kustomize")


@pytest.fixture
def _kustomize() -> None:
    from gitkrm.sync import kustomize

    kustomize.command()


def flux(kind: str, name: str) -> ObjectRef:
    group = {
        "Kustomization": "kustomize.toolkit.fluxcd.io",
        "ArtifactGenerator": "source.extensions.fluxcd.io",
        "ExternalArtifact": "source.toolkit.fluxcd.io",
    }[kind]
    return ObjectRef(group=group, kind=kind, name=name, namespace="flux-system")


WAIT = ("--wait", "--timeout", "60s")
PODINFO = ObjectRef(group="apps", kind="Deployment", name="podinfo", namespace="podinfo")
ISSUER = ObjectRef(group="", kind="ConfigMap", name="issuer", namespace="gateway-system")


def ready(obj: dict[str, Any] | None) -> tuple[str, str, str]:
    assert obj is not None
    for c in obj.get("status", {}).get("conditions", []):
        if c["type"] == "Ready":
            return c["status"], c["reason"], c["message"]
    raise AssertionError(f"no Ready condition: {obj.get('status')}")


def sync(root: Path, url: str, state: Path, *more: str) -> subprocess.CompletedProcess[str]:
    """`run --once` of clusters/staging (`more`: e.g. `--wait --timeout 60s`)."""
    return gitkrm("run", "--repo", url, "--path", "clusters/staging", "--interpret", "flux",
                  "--once", *more, "--state", str(state), cwd=root, timeout=120)  # fmt: skip


def child_syncs(log: str, kustomization: str) -> list[str]:
    """The revisions a Kustomization's child synced, from the log lines of its syncs."""
    pattern = rf"sync source=flux-system-{kustomization}-[0-9a-f]{{6}} revision=(\S+) result="
    return re.findall(pattern, log)


async def test_the_example_layout_syncs_with_artifacts(tmp_path: Path) -> None:
    repo = monorepo(tmp_path)
    state = tmp_path / "state"
    done = sync(tmp_path, repo.url, state, *WAIT)
    assert done.returncode == 0, done.stderr
    assert "are Current" in done.stdout
    assert done.stderr.count("namespace flux-system created for --interpret flux") == 1
    log = done.stderr  # dependsOn: controllers, configs, apps
    assert (
        log.index("sync source=flux-system-infra-controllers-")
        < log.index("sync source=flux-system-infra-configs-")
        < log.index("sync source=flux-system-apps-")
    )
    # the artifacts' objects, as source-watcher writes them
    generator = await read_object(state, flux("ArtifactGenerator", "flux-system"))
    assert ready(generator) == (
        "True",
        "Succeeded",
        "reconciliation succeeded, generated 2 artifact(s)",
    )
    assert generator is not None
    inventory = generator["status"]["inventory"]
    assert [e["name"] for e in inventory] == ["apps", "infrastructure"]
    head = repo.commit("nothing")  # a commit outside every artifact
    done = sync(tmp_path, repo.url, state, *WAIT)
    assert done.returncode == 0, done.stderr
    revisions = {}
    for name, entry in zip(("apps", "infrastructure"), inventory, strict=True):
        ea = await read_object(state, flux("ExternalArtifact", name))
        assert ready(ea)[:2] == ("True", "Succeeded")
        assert ea is not None
        artifact = ea["status"]["artifact"]
        assert artifact["revision"] == f"latest@{entry['digest']}"
        assert re.fullmatch(r"latest@sha256:[0-9a-f]{64}", artifact["revision"])
        assert artifact["metadata"] == {"org.opencontainers.image.revision": f"main@sha1:{head}"}
        assert ea["spec"]["sourceRef"]["kind"] == "ArtifactGenerator"
        revisions[name] = artifact["revision"]
    # the Kustomizations applied those revisions, through the overlays of the artifact
    applied = (
        ("infra-controllers", "infrastructure"), ("infra-configs", "infrastructure"),
        ("apps", "apps"),
    )  # fmt: skip
    for ks, artifact in applied:
        obj = await read_object(state, flux("Kustomization", ks))
        assert ready(obj)[2] == f"Applied revision: {revisions[artifact]}"
    podinfo = await read_object(state, PODINFO)
    assert podinfo is not None
    assert podinfo["spec"]["replicas"] == 2  # apps/staging's patch over apps/base
    assert podinfo["metadata"]["labels"]["env"] == "staging"
    issuer = await read_object(state, ISSUER)
    assert issuer is not None
    assert "acme-staging" in issuer["data"]["server"]
    # an edit inside the apps artifact: its child syncs the new artifact, the others do not
    repo.write("apps/staging/podinfo-values.yaml", values(4))
    repo.commit("staging scales up")
    done = sync(tmp_path, repo.url, state, *WAIT)
    assert done.returncode == 0, done.stderr
    podinfo = await read_object(state, PODINFO)
    assert podinfo is not None
    assert podinfo["spec"]["replicas"] == 4
    [changed] = child_syncs(done.stderr, "apps")
    assert changed != revisions["apps"]
    assert child_syncs(done.stderr, "infra-configs") == [revisions["infrastructure"]]


async def test_a_commit_outside_an_artifact_resyncs_nothing(tmp_path: Path) -> None:
    repo = monorepo(tmp_path)
    state = tmp_path / "state"
    agent = AgentProcess(
        "run", "--repo", repo.url, "--path", "clusters/staging", "--interpret", "flux",
        "--state", str(state), "--interval", "1h", "--listen", f"127.0.0.1:{free_port()}",
        cwd=tmp_path, log=tmp_path / "agent.log",
    )  # fmt: skip
    with agent:

        async def replicas(n: int) -> bool:
            obj = await read_object(state, PODINFO)
            return obj is not None and obj["spec"]["replicas"] == n

        await wait_for(lambda: replicas(2), within=60, what="the first sync of apps")
        outside = repo.commit("production only")  # the same files in both artifacts
        repo.write("apps/production/podinfo-values.yaml", values(5))
        outside = repo.commit("production scales up")

        async def generated(sha: str) -> bool:
            ea = await read_object(state, flux("ExternalArtifact", "apps"))
            meta = ((ea or {}).get("status") or {}).get("artifact", {}).get("metadata") or {}
            return meta.get("org.opencontainers.image.revision") == f"main@sha1:{sha}"

        await wait_for(lambda: generated(outside), within=60, what="the generator saw the commit")
        repo.write("apps/staging/podinfo-values.yaml", values(3))
        inside = repo.commit("staging scales up")
        await wait_for(lambda: generated(inside), within=60, what="the generator saw the edit")
        await wait_for(lambda: replicas(3), within=60, what="apps synced the new artifact")

        async def logged(n: int) -> bool:  # the log line follows the objects' writes
            return len(child_syncs(agent.log(), "apps")) >= n

        await wait_for(lambda: logged(2), within=60, what="the second sync of apps was logged")
        # changes of one local repository are seen in order: had the commit outside the
        # artifact re-synced apps, its sync would be logged before this one
        synced = child_syncs(agent.log(), "apps")
        assert len(synced) == 2, synced
        assert synced[0] != synced[1]
        assert len(child_syncs(agent.log(), "infra-controllers")) == 1


async def test_bad_input_is_refused_naming_file_line_and_object(tmp_path: Path) -> None:
    repo = monorepo(tmp_path)
    repo.write(
        "clusters/staging/artifacts.yaml",
        GENERATOR.replace('"@monorepo/apps/base/**"', "apps/base"),
    )
    repo.commit("a copy without its alias")
    state = tmp_path / "state"
    done = sync(tmp_path, repo.url, state)
    assert done.returncode == 1
    where = r"artifacts\.yaml:1: ArtifactGenerator flux-system/flux-system: "
    assert re.search(where + r".*spec\.artifacts\[1\]\.copy\[0\]\.from", done.stderr), done.stderr
    assert await read_object(state, flux("Kustomization", "apps")) is None  # nothing applied
    # valid for the schema, refused by what gitkrm supports: said on the objects
    extract = 'to: "@artifact/base/", strategy: Extract}'
    repo.write(
        "clusters/staging/artifacts.yaml", GENERATOR.replace('to: "@artifact/base/"}', extract)
    )
    nowhere = infrastructure(controllers_from=("ExternalArtifact", "nowhere"))
    repo.write("clusters/staging/infrastructure.yaml", nowhere)
    repo.commit("unsupported")
    done = sync(tmp_path, repo.url, state)
    generator = await read_object(state, flux("ArtifactGenerator", "flux-system"))
    status, reason, message = ready(generator)
    assert (status, reason) == ("False", "BuildFailed")
    assert "spec.artifacts[1].copy[0].strategy: 'Extract'" in message
    apps = await read_object(state, flux("Kustomization", "apps"))
    assert ready(apps)[0] == "False"
    assert "strategy: 'Extract'" in ready(apps)[2]
    controllers = await read_object(state, flux("Kustomization", "infra-controllers"))
    assert (
        "ExternalArtifact flux-system/nowhere not found, and no ArtifactGenerator"
        in ready(controllers)[2]
    )
    assert "Kustomization flux-system/infra-controllers" in done.stderr


async def test_an_artifact_removed_from_its_generator_is_pruned(tmp_path: Path) -> None:
    repo = monorepo(tmp_path)
    state = tmp_path / "state"
    done = sync(tmp_path, repo.url, state, *WAIT)
    assert done.returncode == 0, done.stderr
    assert await read_object(state, PODINFO) is not None
    # the apps artifact and its Kustomization leave Git in one commit
    repo.write("clusters/staging/artifacts.yaml", GENERATOR.split("  - name: apps")[0])
    repo.remove("clusters/staging/apps.yaml")
    repo.commit("no apps")
    done = sync(tmp_path, repo.url, state, *WAIT)
    assert done.returncode == 0, done.stderr
    assert await read_object(state, flux("ExternalArtifact", "apps")) is None
    assert await read_object(state, flux("Kustomization", "apps")) is None  # not left Terminating
    assert await read_object(state, PODINFO) is None  # its objects pruned (prune: true)
    generator = await read_object(state, flux("ArtifactGenerator", "flux-system"))
    assert ready(generator)[2] == "reconciliation succeeded, generated 1 artifact(s)"
    assert generator is not None
    assert [e["name"] for e in generator["status"]["inventory"]] == ["infrastructure"]
    assert await read_object(state, ISSUER) is not None
