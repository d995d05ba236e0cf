from __future__ import annotations

import asyncio
import os
import shutil
import socket
from pathlib import Path

import pytest

from gitkrm.errors import BadRequest, NotFound, ServiceUnavailable, Timeout
from gitkrm.source import (
    GitRef,
    GitSource,
    GitSourceSpec,
    InvalidRevision,
    PathNotFound,
    RefKind,
    WatchedSource,
    git_blob_id,
)
from tests.source.source_gitrepo import RemoteRepo, SourceFactory, git, processes_mentioning
from tests.support.net import free_port


def seed(remote: RemoteRepo) -> str:
    return remote.publish(
        "seed",
        {
            "namespaces.yaml": "kind: Namespace\n",
            "apps/a.yaml": "kind: A\n",
            "apps/b.yml": "kind: B\n",
            "apps/c.json": "{}\n",
            "README.md": "# docs\n",
            ".github/workflows/ci.yaml": "on: push\n",
            ".gitlab-ci.yml": "x: 1\n",
        },
    )


@pytest.fixture
def src(remote: RemoteRepo, make_source: SourceFactory) -> GitSource:
    """The source (branch main, the whole repository) of the seeded remote."""
    seed(remote)
    return make_source(remote.url)


async def test_branch_snapshot_lists_manifests_and_reads_blobs(
    remote: RemoteRepo, src: GitSource
) -> None:
    sha = remote.head()
    snap = await src.snapshot()
    assert snap.revision == sha
    assert sorted(snap.files) == ["apps/a.yaml", "apps/b.yml", "apps/c.json", "namespaces.yaml"]
    assert snap.files["apps/a.yaml"].blob == git_blob_id(b"kind: A\n")
    assert snap.files["apps/a.yaml"].size == len(b"kind: A\n")
    assert snap.read("apps/b.yml") == b"kind: B\n"
    assert snap.read_many(["apps/c.json", "namespaces.yaml"]) == {
        "apps/c.json": b"{}\n",
        "namespaces.yaml": b"kind: Namespace\n",
    }
    with pytest.raises(NotFound, match=r"README\.md"):
        snap.read("README.md")
    assert src.last is snap


async def test_a_kustomization_under_the_path_brings_the_whole_repository_tree(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    remote.publish(
        "tree",
        {
            "overlays/dev/kustomization.yaml": "resources: [../../bases/app]\n",
            "bases/app/kustomization.yaml": "resources: [cm.yaml]\n",
            "bases/app/cm.yaml": "kind: ConfigMap\n",
            "shared/app.properties": "color=blue\n",
            ".sourceignore": "drafts/\n",
            "drafts/x.yaml": "kind: X\n",
            "overlays/.gitkrmignore": "*.tmp.yaml\n",
            "overlays/dev/a.tmp.yaml": "kind: Tmp\n",
        },
    )
    # The whole repository as the path: ignore files apply the same way.
    top = await make_source(remote.url, cache="top").snapshot()
    assert "drafts/x.yaml" not in top.files
    assert top.tree is not None
    assert "shared/app.properties" in top.tree.files
    # A link out of the repository outside the path is named only if a build reaches it.
    remote.symlink("escape", "/etc")
    sha = remote.publish("escape")
    snap = await make_source(remote.url, path="overlays/dev").snapshot()
    assert snap.revision == sha
    assert sorted(snap.files) == ["kustomization.yaml"]
    assert snap.tree is not None
    assert snap.tree.root == "overlays/dev"
    assert {"bases/app/cm.yaml", "shared/app.properties"} <= set(snap.tree.files)
    assert not any(p.startswith("drafts/") or p.endswith(".tmp.yaml") for p in snap.tree.files)
    assert "leaves the repository" in snap.tree.refused["escape"]
    assert snap.read_tree(["shared/app.properties"]) == {"shared/app.properties": b"color=blue\n"}
    # No kustomization under the path: no tree.
    remote.publish("apps", {"apps/a.yaml": "kind: A\n"})
    assert (await make_source(remote.url, cache="apps", path="apps").snapshot()).tree is None


async def test_a_new_cache_is_a_bare_repository_made_by_the_git_cli(
    remote: RemoteRepo, src: GitSource, make_source: SourceFactory, tmp_path: Path
) -> None:
    await src.snapshot()
    cache = tmp_path / "cache"
    assert git("--git-dir", str(cache), "rev-parse", "--is-bare-repository", cwd=tmp_path) == "true"
    assert git("--git-dir", str(cache), "config", "gc.autoDetach", cwd=tmp_path) == "false"
    assert git("--git-dir", str(cache), "config", "core.logAllRefUpdates", cwd=tmp_path) == "false"
    assert (src.git.calls["init"], src.git.calls["config"]) == (1, 2)
    restarted = make_source(remote.url)
    await restarted.snapshot()
    assert restarted.git.calls["init"] == 0  # the cache is used as it is
    assert restarted.git.calls["rev-parse"] >= 1  # ... once git says it is a bare repository


async def test_a_cache_given_relative_to_the_working_directory_is_made_there(
    remote: RemoteRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--state` is often relative (./.gitkrm): the cache is made where the path says,
    not where a git run outside the repository happens to stand."""
    seed(remote)
    monkeypatch.chdir(tmp_path)
    src = GitSource(GitSourceSpec(name="test", url=remote.url), cache_dir=Path("st/git/test"))
    try:
        snap = await src.snapshot()
        assert snap.read("apps/a.yaml") == b"kind: A\n"
    finally:
        await src.close()
    assert (tmp_path / "st" / "git" / "test" / "HEAD").is_file()


async def test_unchanged_remote_is_not_fetched_or_listed_again(
    remote: RemoteRepo, src: GitSource
) -> None:
    first = await src.snapshot()
    calls = dict(src.git.calls)
    assert await src.poll() == first.revision
    again = await src.snapshot()
    assert again is first
    assert src.git.calls["fetch"] == calls["fetch"] == 1
    assert src.git.calls["ls-tree"] == calls["ls-tree"] == 1
    assert src.git.calls["ls-remote"] == calls["ls-remote"] + 2


async def test_new_commit_is_fetched_and_changed_paths_by_blob(
    remote: RemoteRepo, src: GitSource
) -> None:
    first = await src.snapshot()
    remote.write("apps/a.yaml", "kind: A2\n")
    remote.remove("apps/b.yml")
    sha = remote.publish("second", {"apps/d.yaml": "kind: D\n", "README.md": "changed docs\n"})
    assert await src.poll() == sha
    second = await src.snapshot()
    assert second.revision == sha
    assert second.changed_paths(first) == {"apps/a.yaml", "apps/b.yml", "apps/d.yaml"}
    assert second.changed_paths(None) == set(second.files)
    assert second.read("apps/a.yaml") == b"kind: A2\n"
    # The older snapshot stays readable from the same cache.
    assert first.read("apps/b.yml") == b"kind: B\n"


async def test_tag_tracking_annotated_and_lightweight(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    first = seed(remote)
    remote.tag("v1")
    remote.tag("light", annotated=False)
    remote.publish("later", {"apps/a.yaml": "kind: later\n"})
    for name in ("v1", "light"):
        src = make_source(remote.url, ref=GitRef(RefKind.TAG, name), cache=f"cache-{name}")
        assert await src.poll() == first
        snap = await src.snapshot()
        assert snap.revision == first
        assert snap.read("apps/a.yaml") == b"kind: A\n"


async def test_commit_tracking(remote: RemoteRepo, make_source: SourceFactory) -> None:
    first = seed(remote)
    remote.publish("later", {"apps/a.yaml": "kind: later\n"})
    src = make_source(remote.url, ref=GitRef(RefKind.COMMIT, first))
    assert await src.poll() == first
    snap = await src.snapshot()
    assert snap.revision == first
    assert snap.read("apps/a.yaml") == b"kind: A\n"
    assert await src.snapshot() is snap
    assert src.git.calls["ls-remote"] == 0

    missing = make_source(remote.url, ref=GitRef(RefKind.COMMIT, "1" * 40), cache="other")
    with pytest.raises(NotFound, match="1111111111"):
        await missing.snapshot()


def test_ref_names_are_checked() -> None:
    with pytest.raises(BadRequest):
        GitRef(RefKind.COMMIT, "abc123")
    with pytest.raises(BadRequest):
        GitRef(RefKind.BRANCH, "--upload-pack=evil")
    with pytest.raises(BadRequest):
        GitRef(RefKind.BRANCH, "a b")


async def test_sub_path_is_the_root(remote: RemoteRepo, make_source: SourceFactory) -> None:
    seed(remote)
    remote.publish(
        files={"clusters/prod/app.yaml": "kind: P\n", "clusters/prod/nested/x.yaml": "kind: X\n"}
    )
    src = make_source(remote.url, path="clusters/prod/")
    snap = await src.snapshot()
    assert sorted(snap.files) == ["app.yaml", "nested/x.yaml"]
    assert snap.read("nested/x.yaml") == b"kind: X\n"


async def test_missing_sub_path_is_not_found(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    sha = seed(remote)
    src = make_source(remote.url, path="nowhere")
    with pytest.raises(PathNotFound, match="'nowhere' does not exist") as err:
        await src.snapshot()
    assert err.value.revision == sha
    ls_tree = src.git.calls["ls-tree"]
    with pytest.raises(PathNotFound):
        await src.snapshot()  # remembered for this revision: nothing fetched or listed
    assert src.git.calls["fetch"] == 1
    assert src.git.calls["ls-tree"] == ls_tree
    with pytest.raises(BadRequest):
        make_source(remote.url, path="../up")
    file_path = make_source(remote.url, path="namespaces.yaml", cache="c2")
    with pytest.raises(PathNotFound, match="is a file"):
        await file_path.snapshot()


async def test_force_push_is_followed(remote: RemoteRepo, src: GitSource) -> None:
    await src.snapshot()
    git("checkout", "-q", "--orphan", "rewritten", cwd=remote.work)
    git("rm", "-q", "-r", "--cached", ".", cwd=remote.work)
    for p in list(remote.work.iterdir()):
        if p.name != ".git":
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    remote.write("only.yaml", "kind: Rewritten\n")
    rewritten = remote.commit("history rewritten")
    remote.push(force=True)
    snap = await src.snapshot()
    assert snap.revision == rewritten
    assert sorted(snap.files) == ["only.yaml"]
    assert snap.read("only.yaml") == b"kind: Rewritten\n"


@pytest.mark.parametrize(("kind", "name"), [(RefKind.BRANCH, "feature"), (RefKind.TAG, "v1")])
async def test_a_deleted_ref_is_an_error_and_the_last_snapshot_stays(
    remote: RemoteRepo, make_source: SourceFactory, kind: RefKind, name: str
) -> None:
    seed(remote)
    if kind is RefKind.BRANCH:
        remote.push(f"HEAD:refs/heads/{name}")
    else:
        remote.tag(name)
    src = make_source(remote.url, ref=GitRef(kind, name))
    snap = await src.snapshot()
    remote.delete_remote_ref(f"refs/{'heads' if kind is RefKind.BRANCH else 'tags'}/{name}")
    with pytest.raises(NotFound, match=f"{kind} '{name}' not found"):
        await src.poll()
    with pytest.raises(NotFound, match=f"{kind} '{name}' not found"):
        await src.snapshot()
    assert src.last is snap
    assert snap.read("apps/a.yaml") == b"kind: A\n"


async def test_unreachable_remote(make_source: SourceFactory) -> None:
    src = make_source(f"https://127.0.0.1:{free_port()}/repo.git")
    with pytest.raises(ServiceUnavailable, match="unreachable"):
        await src.snapshot()
    missing = make_source("/nonexistent/repo.git", cache="c2")
    with pytest.raises(NotFound):
        await missing.snapshot()


async def test_gitkrmignore_and_defaults(remote: RemoteRepo, make_source: SourceFactory) -> None:
    seed(remote)
    remote.publish(
        files={
            ".gitkrmignore": "/apps/c.json\n!.gitlab-ci.yml\n",
            "apps/.gitkrmignore": "*.yml\n",
            "apps/drafts/x.yaml": "kind: Draft\n",
            "apps/drafts/.gitkrmignore": "*\n!keep.yaml\n",
            "apps/drafts/keep.yaml": "kind: Keep\n",
            "package.json": "{}\n",
            "kustomize/kustomization.yaml": "resources: []\n",
            "kustomize/app.properties": "a=b\n",
            "kustomize/base/readme.txt": "x\n",
        }
    )
    snap = await make_source(remote.url).snapshot()
    assert sorted(snap.files) == [
        ".gitlab-ci.yml",
        "apps/a.yaml",
        "apps/drafts/keep.yaml",
        "kustomize/app.properties",
        "kustomize/base/readme.txt",
        "kustomize/kustomization.yaml",
        "namespaces.yaml",
    ]


async def test_gitkrmignore_above_the_sub_path_applies(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    remote.publish(
        files={
            ".gitkrmignore": "secret-*.yaml\n",
            "env/.gitkrmignore": "/prod/skip.yaml\n",
            "env/prod/app.yaml": "kind: A\n",
            "env/prod/skip.yaml": "kind: S\n",
            "env/prod/secret-x.yaml": "kind: Secret\n",
        }
    )
    snap = await make_source(remote.url, path="env/prod").snapshot()
    assert sorted(snap.files) == ["app.yaml"]


async def test_the_sources_own_ignore_lines_come_after_the_root_file(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    """Flux's GitRepository `spec.ignore` (podinfo's: exclude all, include one directory),
    applied after the repository's `.sourceignore`, so the root file can't take it back."""
    remote.publish(
        files={
            ".sourceignore": "!docs/\n",
            "deploy/app.yaml": "kind: A\n",
            "deploy/test/fixture.yaml": "kind: F\n",
            "docs/example.yaml": "kind: E\n",
            "kustomize/kustomization.yaml": "resources: []\n",
        }
    )
    ignore = ("# exclude all", "/*", "# include deploy dir", "!/deploy", "**/test/")
    snap = await make_source(remote.url, ignore=ignore).snapshot()
    assert sorted(snap.files) == ["deploy/app.yaml"]
    under = await make_source(remote.url, cache="sub", path="deploy", ignore=ignore).snapshot()
    assert sorted(under.files) == ["app.yaml"]  # patterns are relative to the repository


async def test_symlinks_inside_are_resolved_and_escapes_refused(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    seed(remote)
    remote.symlink("linked.yaml", "apps/a.yaml")
    remote.symlink("shared", "apps")
    remote.symlink("docs.md", "../../outside.md")  # not a manifest name: not followed
    remote.publish()
    src = make_source(remote.url)
    snap = await src.snapshot()
    assert snap.read("linked.yaml") == b"kind: A\n"
    assert snap.files["linked.yaml"].blob == snap.files["apps/a.yaml"].blob
    assert snap.read("shared/b.yml") == b"kind: B\n"
    assert "docs.md" not in snap.files

    remote.symlink("apps/evil.yaml", "../../../etc/passwd")
    remote.symlink("abs.yaml", "/etc/hostname")
    remote.symlink("dangling.yaml", "apps/nope.yaml")
    bad = remote.publish("bad links")
    with pytest.raises(InvalidRevision) as err:
        await src.snapshot()
    assert err.value.revision == bad
    fields = {c.field: c.message for c in err.value.causes}
    assert set(fields) == {"apps/evil.yaml", "abs.yaml", "dangling.yaml"}
    assert "leaves the source root" in fields["apps/evil.yaml"]
    assert "does not exist" in fields["dangling.yaml"]
    assert "apps/evil.yaml" in err.value.message
    assert src.last is snap


async def test_symlink_out_of_the_sub_path_is_refused(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    remote.write("base/a.yaml", "kind: A\n")
    remote.symlink("env/a.yaml", "../base/a.yaml")
    remote.publish()
    with pytest.raises(InvalidRevision, match=r"env/a\.yaml"):
        await make_source(remote.url, path="env").snapshot()
    whole = await make_source(remote.url, cache="c2").snapshot()
    assert whole.read("env/a.yaml") == b"kind: A\n"


async def test_huge_file_is_an_error_naming_it(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    seed(remote)
    remote.write("apps/huge.yaml", b"x" * 2048)
    remote.write("big.bin", b"x" * 4096)  # not listed, so not checked
    sha = remote.publish()
    src = make_source(remote.url, max_file_size=1024)
    with pytest.raises(InvalidRevision, match=r"apps/huge\.yaml") as err:
        await src.snapshot()
    assert [c.field for c in err.value.causes] == ["apps/huge.yaml"]
    assert "2,048 bytes" in err.value.message
    assert err.value.revision == sha
    fetches = src.git.calls["fetch"]
    with pytest.raises(InvalidRevision):
        await src.snapshot()
    assert src.git.calls["fetch"] == fetches
    remote.remove("apps/huge.yaml")
    remote.publish("fix")
    assert "apps/a.yaml" in (await src.snapshot()).files


def _corrupt_objects(cache: Path) -> int:
    """Truncate every object file (packs and loose objects) of a cache repository."""
    count = 0
    for dirpath, _, names in os.walk(cache / "objects"):
        for name in names:
            p = Path(dirpath) / name
            if name.endswith((".pack", ".idx")) or len(Path(dirpath).name) == 2:
                os.chmod(p, 0o644)
                data = p.read_bytes()
                p.write_bytes(data[: len(data) // 2])
                count += 1
    return count


@pytest.mark.parametrize("packed", [False, True])
async def test_corrupted_cache_is_recloned_on_restart(
    remote: RemoteRepo, src: GitSource, make_source: SourceFactory, tmp_path: Path, packed: bool
) -> None:
    snap = await src.snapshot()
    await src.close()
    if packed:
        git("--git-dir=cache", "repack", "-q", "-a", "-d", cwd=tmp_path)
    assert _corrupt_objects(tmp_path / "cache") > 0
    restarted = make_source(remote.url)
    again = await restarted.snapshot()
    assert again.revision == snap.revision
    assert restarted.git.calls["fetch"] == 1  # the damage was found and the cache re-cloned
    assert again.read_many(list(again.files)) == snap.read_many(list(snap.files))


async def test_intact_cache_is_reused_on_restart(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    seed(remote)
    snap = await make_source(remote.url).snapshot()
    restarted = make_source(remote.url)
    assert (await restarted.snapshot()).revision == snap.revision
    assert restarted.git.calls["fetch"] == 0


async def test_corrupted_cache_found_while_reading_is_recloned(
    src: GitSource, tmp_path: Path
) -> None:
    snap = await src.snapshot()
    await src.close()  # stops the reader, as a crash would
    _corrupt_objects(tmp_path / "cache")
    with pytest.raises(Exception, match="cache"):
        snap.read_many(list(snap.files))
    again = await src.snapshot()
    assert again is snap  # same revision: the repaired cache serves the same snapshot
    assert snap.read("apps/a.yaml") == b"kind: A\n"
    assert src.git.calls["fetch"] == 2


@pytest.mark.parametrize("damage", ["garbage-dir", "garbage-config", "garbage-head", "file"])
async def test_garbage_in_the_cache_is_recloned(
    remote: RemoteRepo, make_source: SourceFactory, tmp_path: Path, damage: str
) -> None:
    seed(remote)
    cache = tmp_path / "cache"
    first = await make_source(remote.url).snapshot()
    if damage == "garbage-dir":
        shutil.rmtree(cache)
        cache.mkdir()
        (cache / "HEAD").write_bytes(os.urandom(64))
        (cache / "objects").write_text("not a directory")
    elif damage == "garbage-config":
        (cache / "config").write_bytes(b"[core\n\x00\xff garbage")
    elif damage == "garbage-head":
        (cache / "HEAD").write_bytes(b"\x00garbage\n")
    else:
        shutil.rmtree(cache)
        cache.write_bytes(b"a file where the cache should be")
    sha = remote.publish(files={"apps/a.yaml": "kind: A3\n"})
    snap = await make_source(remote.url).snapshot()
    assert snap.revision == sha != first.revision
    assert snap.read("apps/a.yaml") == b"kind: A3\n"


async def test_cache_for_another_url_is_replaced(
    remote: RemoteRepo, make_source: SourceFactory, tmp_path: Path
) -> None:
    seed(remote)
    await make_source(remote.url).snapshot()
    other = RemoteRepo(tmp_path / "other")
    other.publish(files={"other.yaml": "kind: O\n"})
    snap = await make_source(other.url).snapshot()
    assert sorted(snap.files) == ["other.yaml"]


async def test_silent_remote_times_out_and_git_is_killed(make_source: SourceFactory) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections complete, but nothing ever answers
        port = silent.getsockname()[1]
        src = make_source(f"https://127.0.0.1:{port}/repo.git", timeout=1.0)
        with pytest.raises(Timeout, match="no answer within 1s"):
            await src.snapshot()
        assert not processes_mentioning(f"127.0.0.1:{port}")


async def test_relative_path_url_is_made_absolute(
    remote: RemoteRepo, make_source: SourceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(remote)
    monkeypatch.chdir(remote.bare.parent)
    src = make_source("remote.git")
    monkeypatch.chdir("/")
    assert "apps/a.yaml" in (await src.snapshot()).files


def test_ref_from_cli_flags() -> None:
    assert GitRef.from_flags() == GitRef(RefKind.BRANCH, "main")
    assert GitRef.from_flags(tag="v1") == GitRef(RefKind.TAG, "v1")
    assert str(GitRef.from_flags(branch="dev")) == "branch 'dev'"
    with pytest.raises(BadRequest, match="at most one"):
        GitRef.from_flags(branch="dev", tag="v1")


async def test_local_repository_reports_new_commits(remote: RemoteRepo, src: GitSource) -> None:
    assert isinstance(src, WatchedSource)
    first = await src.snapshot()
    changes = src.changes()
    waiter = asyncio.ensure_future(anext(changes))
    # watchfiles starts watching when the iterator first runs; push until it reports.
    for i in range(100):
        remote.publish(f"edit {i}", {"apps/a.yaml": f"kind: A{i}\n"})
        done, _ = await asyncio.wait({waiter}, timeout=0.2)
        if done:
            break
    assert waiter.done(), "no change reported for a push to a local repository"
    assert (await src.snapshot()).revision == remote.head() != first.revision
    await src.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(changes), 10)


async def test_remote_url_reports_no_changes(make_source: SourceFactory) -> None:
    src = make_source("https://example.invalid/repo.git")
    assert [c async for c in src.changes()] == []
