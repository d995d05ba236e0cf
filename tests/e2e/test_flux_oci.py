"""Flux's "gitless" delivery through the CLI (`gitkrm run --once --interpret flux`), in the
shape of Flux's multi-tenancy example (written here, not copied): Kustomization `kyverno`
over `infrastructure/kyverno` of the Git repository applies an OCIRepository (`oci://`
of a real registry on loopback, the manifests pushed as `flux push artifact` does) and a
Kustomization `kyverno-controller` over it (`path: ./`, prune, wait). The objects of the
artifact are applied, the statuses are Flux's (`v1.14.4@sha256:<digest>`), an unchanged
artifact is not pulled again, a semver range takes a tag pushed later, and a missing tag
is Ready=False on both objects."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from gitkrm.krm import ObjectRef
from tests.e2e.e2e_support import gitkrm, read_object
from tests.e2e.flux_repo import gotk_sync
from tests.e2e.manifests import flux_object, kustomization
from tests.support.oci_push import Pusher, tarball
from tests.support.registry import Registry, oci_registry
from tests.sync.sync_helpers import Remote

__all__ = ["oci_registry"]  # fixture

NS = "flux-system"
NAME = "kyverno-controller"
KS = ObjectRef(group="kustomize.toolkit.fluxcd.io", kind="Kustomization",
               name="kyverno-controller", namespace=NS)  # fmt: skip
OCIREPO = ObjectRef(group="source.toolkit.fluxcd.io", kind="OCIRepository",
                    name="kyverno-controller", namespace=NS)  # fmt: skip
CONFIG = ObjectRef(group="", kind="ConfigMap", name="kyverno", namespace="kyverno")

INFRASTRUCTURE = kustomization("kyverno", "./infrastructure/kyverno", wait=None, timeout=None)


def sync_yaml(url: str, ref: dict[str, str]) -> str:
    """Kyverno's OCIRepository (signed with cosign) at `ref`, and a Kustomization over it."""
    spec = {"interval": "6h", "url": url, "insecure": True, "ref": ref,
            "verify": {"provider": "cosign"}}  # fmt: skip
    source = flux_object("source.toolkit.fluxcd.io/v1beta2", "OCIRepository", NAME, spec)
    ks = kustomization(NAME, "./", source=("OCIRepository", NAME), interval="12h", timeout="5m")
    return source + "---\n" + ks


def manifests(version: str) -> dict[str, str]:
    return {
        "namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: kyverno}\n",
        "config.yaml": (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kyverno, namespace: kyverno}\n"
            f"data: {{version: '{version}'}}\n"
        ),
        "kustomization.yaml": "resources: [namespace.yaml, config.yaml]\n",
    }


def fleet(root: Path, url: str) -> Remote:
    repo = Remote(root / "fleet")
    repo.write("clusters/dev/flux-system/gotk-sync.yaml", gotk_sync(repo.url))
    repo.write("clusters/dev/infrastructure.yaml", INFRASTRUCTURE)
    repo.write("infrastructure/kyverno/kustomization.yaml", "resources: [sync.yaml]\n")
    repo.write("infrastructure/kyverno/sync.yaml", sync_yaml(url, {"tag": "v1.14.4"}))
    repo.commit("the kyverno layout")
    return repo


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    assert obj is not None
    return next(c for c in obj["status"]["conditions"] if c["type"] == kind)


def run(root: Path, url: str, state: Path) -> tuple[int, str, float]:
    began = time.perf_counter()
    done = gitkrm("run", "--repo", url, "--path", "clusters/dev", "--interpret", "flux",
                  "--once", "--wait", "--timeout", "90s", "--state", str(state),
                  cwd=root, timeout=180)  # fmt: skip
    return done.returncode, done.stderr, time.perf_counter() - began


async def applied(state: Path, version: str, revision: str) -> dict[str, Any]:
    """The artifact's ConfigMap is at `version`, the Kustomization says `revision`."""
    config = await read_object(state, CONFIG)
    assert config is not None
    assert config["data"] == {"version": version}
    ks = await read_object(state, KS)
    assert ks is not None
    assert ks["status"]["lastAppliedRevision"] == revision
    return ks


@pytest.fixture
def _kustomize() -> None:
    from gitkrm.sync import kustomize

    kustomize.command()


@pytest.mark.usefixtures("_kustomize")
async def test_a_kustomization_over_an_oci_repository(
    oci_registry: Registry, tmp_path: Path
) -> None:
    push = Pusher(oci_registry.host)
    name = "kyverno/manifests/kyverno"
    first = push.artifact(name, "v1.14.4", tarball(manifests("1.14.4")))
    url = f"{oci_registry.url}/{name}"
    repo = fleet(tmp_path, url)
    state = tmp_path / "state"

    code, log, took_first = run(tmp_path, repo.url, state)
    assert code == 0, log
    ks = await applied(state, "1.14.4", f"v1.14.4@{first}")
    assert condition(ks, "Ready")["status"] == "True"
    not_honoured = condition(ks, "NotHonoured")["message"]
    assert "OCIRepository flux-system/kyverno-controller spec.verify" in not_honoured
    oci = await read_object(state, OCIREPO)
    assert oci is not None
    assert condition(oci, "Ready")["status"] == "True"
    assert oci["status"]["artifact"]["revision"] == f"v1.14.4@{first}"
    assert oci["status"]["artifact"]["digest"] == first
    unpacked = list(state.rglob("oci/sha256-*"))
    assert len(unpacked) == 1
    stamp = unpacked[0].stat().st_ino  # an unpack replaces the directory: a new inode

    # Nothing changed: the manifest is read again, the layer is neither pulled nor unpacked.
    code, log, took_again = run(tmp_path, repo.url, state)
    assert code == 0, log
    assert list(state.rglob("oci/sha256-*")) == unpacked
    assert unpacked[0].stat().st_ino == stamp  # a use only touches it (source.sweep)
    print(f"first sync {took_first:.2f} s, unchanged re-sync {took_again:.2f} s")

    # A semver range: the highest matching tag, and one pushed later at the next sync.
    repo.write("infrastructure/kyverno/sync.yaml", sync_yaml(url, {"semver": ">=1.14.0 <1.15.0"}))
    repo.commit("follow 1.14 patches")
    push.artifact(name, "v1.15.0", tarball(manifests("1.15.0")))
    patch = push.artifact(name, "v1.14.5", tarball(manifests("1.14.5")))
    code, log, _ = run(tmp_path, repo.url, state)
    assert code == 0, log
    await applied(state, "1.14.5", f"v1.14.5@{patch}")

    # A tag that does not exist: Ready=False on both, naming it; the objects stay.
    repo.write("infrastructure/kyverno/sync.yaml", sync_yaml(url, {"tag": "v9.9.9"}))
    repo.commit("a tag never pushed")
    code, log, _ = run(tmp_path, repo.url, state)
    assert code != 0
    assert f"{url}:v9.9.9: not found" in log
    assert condition(await read_object(state, OCIREPO), "Ready")["status"] == "False"
    assert condition(await read_object(state, KS), "Ready")["status"] == "False"
    assert await read_object(state, CONFIG) is not None


@pytest.mark.usefixtures("_kustomize")
async def test_deleting_the_oci_repository_and_its_kustomization_prunes_their_objects(
    oci_registry: Registry, tmp_path: Path
) -> None:
    name = "kyverno/manifests/removed"
    Pusher(oci_registry.host).artifact(name, "v1.14.4", tarball(manifests("1.14.4")))
    repo = fleet(tmp_path, f"{oci_registry.url}/{name}")
    state = tmp_path / "state"
    code, log, _ = run(tmp_path, repo.url, state)
    assert code == 0, log
    assert await read_object(state, CONFIG) is not None
    repo.write("infrastructure/kyverno/kustomization.yaml", "resources: [keep.yaml]\n")
    repo.write(
        "infrastructure/kyverno/keep.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep, namespace: flux-system}\n",
    )
    repo.remove("infrastructure/kyverno/sync.yaml")
    repo.commit("kyverno removed")
    code, log, _ = run(tmp_path, repo.url, state)
    assert code == 0, log
    assert await read_object(state, KS) is None
    assert await read_object(state, OCIREPO) is None
    assert await read_object(state, CONFIG) is None
