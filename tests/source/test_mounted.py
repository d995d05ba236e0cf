"""A source with another repository mounted under `$<name>/`: one snapshot, contents from
the repository that owns each path, a revision that moves when either does."""

from __future__ import annotations

from pathlib import Path

from gitkrm.source import GitSource, GitSourceSpec
from gitkrm.source.mounted import MountedSource
from tests.source.source_gitrepo import RemoteRepo


async def test_values_of_another_repository_are_mounted(tmp_path: Path) -> None:
    main, values = RemoteRepo(tmp_path / "main"), RemoteRepo(tmp_path / "values")
    main.publish(files={"Chart.yaml": "name: web\n"})
    values.write("envs/prod.yaml", "replicas: 3\n")
    values.write("other.yaml", "a: 1\n")
    main_sha, values_sha = main.head(), values.commit()
    values.push()

    def git(name: str, url: str) -> GitSource:
        return GitSource(GitSourceSpec(name=name, url=url), cache_dir=tmp_path / "cache" / name)

    source = MountedSource(main=git("m", main.url), mounts={"values": git("v", values.url)})
    snap = await source.snapshot()
    assert snap.revision == f"{main_sha}+values:{values_sha}"
    assert set(snap.files) == {"Chart.yaml", "$values/envs/prod.yaml", "$values/other.yaml"}
    got = snap.read_many(["Chart.yaml", "$values/envs/prod.yaml"])
    assert got == {"Chart.yaml": b"name: web\n", "$values/envs/prod.yaml": b"replicas: 3\n"}
    assert await source.snapshot() is snap
    moved = values.publish(files={"envs/prod.yaml": "replicas: 4\n"})
    assert await source.poll() == f"{main_sha}+values:{moved}"
    snap = await source.snapshot()
    assert snap.read("$values/envs/prod.yaml") == b"replicas: 4\n"
    await source.close()
