"""An ExternalArtifact of a real Git repository as a source: its revision moves exactly
when a file of the artifact does, the snapshot is the artifact seen at its path (with the
artifact as the tree kustomize builds read), and what the repository refuses (a symlink
leaving it) is never read into an artifact."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gitkrm.errors import GitkrmError
from gitkrm.source import GitSource, GitSourceSpec
from gitkrm.source.artifact import ArtifactSource
from gitkrm.source.artifact_copy import ArtifactRecipe, CopyOp
from tests.source.source_gitrepo import RemoteRepo

RECIPE = ArtifactRecipe(
    name="apps",
    copy=(
        CopyOp("repo", "apps/base/**", "base/"),
        CopyOp("repo", "apps/staging/**", "staging/"),
    ),
    aliases=(("repo", ""),),
)


def artifact(remote: RemoteRepo, tmp_path: Path, path: str = "staging") -> ArtifactSource:
    spec = GitSourceSpec(name="apps", url=remote.url, repo_tree=True)
    repository = GitSource(spec, cache_dir=tmp_path / "cache")
    return ArtifactSource(name="apps", repository=repository, recipe=RECIPE, path=path)


@pytest.fixture
def remote(tmp_path: Path) -> RemoteRepo:
    repo = RemoteRepo(tmp_path / "repo")
    repo.publish(
        "apps",
        {
            "apps/base/app/kustomization.yaml": "resources: [cm.yaml]\n",
            "apps/base/app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
            "apps/staging/kustomization.yaml": "resources: [../base/app]\n",
            "apps/staging/notes.txt": "read by kustomize only\n",
            "apps/production/kustomization.yaml": "resources: [../base/app]\n",
        },
    )
    return repo


async def test_the_revision_follows_the_artifact_not_the_commits(
    remote: RemoteRepo, tmp_path: Path
) -> None:
    source = artifact(remote, tmp_path)
    try:
        first = await source.snapshot()
        assert re.fullmatch(r"latest@sha256:[0-9a-f]{64}", first.revision)
        # the files under the path (a kustomization's directory is read whole)
        assert set(first.files) == {"kustomization.yaml", "notes.txt"}
        assert first.tree is not None
        assert first.tree.root == "staging"
        assert set(first.tree.files) == {
            "base/app/kustomization.yaml", "base/app/cm.yaml", "staging/kustomization.yaml",
            "staging/notes.txt",
        }  # fmt: skip
        assert first.read_tree(["base/app/cm.yaml"])["base/app/cm.yaml"].startswith(b"apiVersion")
        remote.publish(
            "production only",
            {"apps/production/kustomization.yaml": "resources: [../base/app, x.yaml]\n"},
        )
        assert await source.poll() == first.revision
        assert await source.snapshot() is first  # the same snapshot: nothing to render
        remote.write(
            "apps/base/app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
        )
        remote.publish("base edited")
        second = await source.snapshot()
        assert second.revision != first.revision
        assert b"name: b" in second.read_tree(["base/app/cm.yaml"])["base/app/cm.yaml"]
    finally:
        await source.close()


async def test_a_symlink_leaving_the_repository_never_enters_an_artifact(
    remote: RemoteRepo, tmp_path: Path
) -> None:
    secret = tmp_path / "outside.yaml"
    secret.write_text("kind: Secret\n")
    remote.symlink("apps/staging/escape.yaml", str(secret))
    remote.publish("a link out")
    source = artifact(remote, tmp_path)
    try:
        with pytest.raises(GitkrmError) as e:
            await source.snapshot()
        assert "escape.yaml" in e.value.message
    finally:
        await source.close()


async def test_a_path_the_artifact_lacks_is_an_error(remote: RemoteRepo, tmp_path: Path) -> None:
    source = artifact(remote, tmp_path, path="production")
    try:
        with pytest.raises(GitkrmError, match="'production' is not in the artifact"):
            await source.snapshot()
    finally:
        await source.close()
