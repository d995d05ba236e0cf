"""A Flux GitRepository with `spec.ref.semver` synced through the CLI: the highest tag the
range allows is checked out, the statuses name it as source-controller does
(`<tag>@sha1:<sha>`), a matching tag pushed later is taken at the next sync and one
outside the range is not, and a range no tag satisfies is Ready=False naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitkrm.krm import ObjectRef
from tests.e2e.e2e_support import gitkrm, read_object
from tests.e2e.flux_repo import extras, fleet
from tests.sync.sync_helpers import Remote

pytestmark = pytest.mark.usefixtures("_kustomize")


@pytest.fixture
def _kustomize() -> None:
    from gitkrm.sync import kustomize

    kustomize.command()


NS = "flux-system"
KS = ObjectRef(group="kustomize.toolkit.fluxcd.io", kind="Kustomization", name="extras",
               namespace=NS)  # fmt: skip
REPO = ObjectRef(group="source.toolkit.fluxcd.io", kind="GitRepository", name="extras",
                 namespace=NS)  # fmt: skip
SETTINGS = ObjectRef(group="", kind="ConfigMap", name="extra-settings", namespace=NS)


def release(repo: Remote, tag: str) -> str:
    repo.write("deploy/settings.yaml", f"""\
apiVersion: v1
kind: ConfigMap
metadata: {{name: extra-settings, namespace: {NS}}}
data: {{release: "{tag}"}}
""")  # fmt: skip
    sha = repo.commit(tag)
    repo.tag(tag)
    return sha


def over_range(url: str, range_: str) -> str:
    return extras(url, ref={"semver": range_})


def ready(obj: dict[str, Any] | None) -> tuple[str, str, str]:
    assert obj is not None
    c = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
    return c["status"], c["reason"], c["message"]


async def released(state: Path, tag: str) -> None:
    """The ConfigMap in the store is the one of `tag`."""
    settings = await read_object(state, SETTINGS)
    assert settings is not None
    assert settings["data"] == {"release": tag}


async def applied(state: Path, tag: str, sha: str) -> None:
    """`tag` (at `sha`) is synced: its ConfigMap in the store, named by the Kustomization's
    lastAppliedRevision."""
    await released(state, tag)
    ks = await read_object(state, KS)
    assert ks is not None
    assert ks["status"]["lastAppliedRevision"] == f"{tag}@sha1:{sha}"


def sync(root: Path, url: str, state: Path) -> tuple[int, str]:
    done = gitkrm("run", "--repo", url, "--path", "clusters/dev", "--interpret", "flux",
                  "--once", "--state", str(state),
                  cwd=root, timeout=120)  # fmt: skip
    return done.returncode, done.stderr


async def test_a_semver_range_follows_the_highest_matching_tag(tmp_path: Path) -> None:
    second = Remote(tmp_path / "extras")
    one = release(second, "v1.0.0")
    release(second, "v2.0.0")
    release(second, "v1.1.0-rc.1")  # a pre-release: the range names none
    repo = fleet(
        tmp_path,
        components=False,
        files={"clusters/dev/extras.yaml": over_range(second.url, ">=1.0.0 <2.0.0")},
    )
    state = tmp_path / "state"
    code, log = sync(tmp_path, repo.url, state)
    assert code == 0, log
    await applied(state, "v1.0.0", one)
    git_repository = await read_object(state, REPO)
    assert git_repository is not None
    assert git_repository["status"]["artifact"]["revision"] == f"v1.0.0@sha1:{one}"

    # Tags pushed later: one inside the range is synced, one outside it is not.
    release(second, "v3.0.0")
    one_two = release(second, "1.2.0")  # no `v`: allowed, as Flux
    code, log = sync(tmp_path, repo.url, state)
    assert code == 0, log
    await applied(state, "1.2.0", one_two)

    # A range no tag satisfies: Ready=False naming it, the objects stay.
    repo.write("clusters/dev/extras.yaml", over_range(second.url, "~5.0"))
    repo.commit("a range with no tag")
    code, log = sync(tmp_path, repo.url, state)
    assert code != 0
    assert "no match found for semver: ~5.0" in log
    status, _, message = ready(await read_object(state, REPO))
    assert (status, "no match found for semver: ~5.0" in message) == ("False", True)
    status, _, message = ready(await read_object(state, KS))
    assert (status, "no match found for semver: ~5.0" in message) == ("False", True)
    assert await read_object(state, SETTINGS) is not None


async def test_a_gitkrm_source_tracks_a_semver_range_from_the_command_line(
    tmp_path: Path,
) -> None:
    repo = Remote(tmp_path / "app")
    repo.write(
        "deploy/namespace.yaml", f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n"
    )
    release(repo, "v1.4.0")
    release(repo, "v2.0.0-beta.1")
    state = tmp_path / "state"

    def run() -> None:
        done = gitkrm("run", "--repo", repo.url, "--semver", "^1.2", "--path", "deploy",
                      "--once", "--state", str(state), cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr

    run()
    await released(state, "v1.4.0")
    release(repo, "v1.5.1")
    run()
    await released(state, "v1.5.1")
