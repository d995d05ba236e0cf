"""A plain directory as a source: listing, revision by content, symlinks, watchfiles."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from gitkrm.errors import BadRequest, NotFound
from gitkrm.source import InvalidRevision, LocalSource, WatchedSource, git_blob_id


def write(root: Path, path: str, content: str | bytes) -> None:
    p = root / path
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(content.encode() if isinstance(content, str) else content)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "manifests"
    write(root, "ns.yaml", "kind: Namespace\n")
    write(root, "apps/a.yaml", "kind: A\n")
    write(root, "apps/notes.txt", "not a manifest\n")
    write(root, ".git/config", "[core]\n")
    write(root, ".github/ci.yaml", "on: push\n")
    return root


async def test_lists_manifests_with_git_blob_ids(tree: Path) -> None:
    src = LocalSource(name="dev", root=tree)
    assert isinstance(src, WatchedSource)
    snap = await src.snapshot()
    assert sorted(snap.files) == ["apps/a.yaml", "ns.yaml"]
    assert snap.files["apps/a.yaml"].blob == git_blob_id(b"kind: A\n")
    assert snap.read("apps/a.yaml") == b"kind: A\n"
    assert await src.snapshot() is snap
    assert await src.poll() == snap.revision
    await src.close()


async def test_revision_follows_content_and_snapshot_stays_frozen(tree: Path) -> None:
    src = LocalSource(name="dev", root=tree)
    first = await src.snapshot()
    write(tree, "apps/a.yaml", "kind: A2\n")
    write(tree, "apps/notes.txt", "ignored change\n")
    second = await src.snapshot()
    assert second.revision != first.revision
    assert second.changed_paths(first) == {"apps/a.yaml"}
    assert first.read("apps/a.yaml") == b"kind: A\n"
    assert second.read("apps/a.yaml") == b"kind: A2\n"
    (tree / "apps/a.yaml").unlink()
    third = await src.snapshot()
    assert third.changed_paths(second) == {"apps/a.yaml"}
    write(tree, "apps/a.yaml", "kind: A2\n")
    assert (await src.snapshot()).revision == second.revision


async def test_sub_path_ignore_files_and_kustomization(tree: Path) -> None:
    write(tree, "apps/.gitkrmignore", "draft-*\n")
    write(tree, "apps/draft-x.yaml", "kind: Draft\n")
    write(tree, "k/kustomization.yaml", "resources: []\n")
    write(tree, "k/config.env", "A=1\n")
    snap = await LocalSource(name="dev", root=tree).snapshot()
    assert sorted(snap.files) == ["apps/a.yaml", "k/config.env", "k/kustomization.yaml", "ns.yaml"]
    sub = await LocalSource(name="dev", root=tree, path="apps").snapshot()
    assert sorted(sub.files) == ["a.yaml"]
    with pytest.raises(BadRequest):
        LocalSource(name="dev", root=tree, path="../x")
    with pytest.raises(NotFound):
        await LocalSource(name="dev", root=tree, path="absent").snapshot()


async def test_symlinks_resolved_inside_and_refused_outside(tree: Path, tmp_path: Path) -> None:
    os.symlink("apps/a.yaml", tree / "rel.yaml")
    os.symlink(tree / "apps", tree / "absdir")
    snap = await LocalSource(name="dev", root=tree).snapshot()
    assert snap.read("rel.yaml") == b"kind: A\n"
    assert snap.read("absdir/a.yaml") == b"kind: A\n"
    write(tmp_path, "outside.yaml", "kind: Outside\n")
    os.symlink(tmp_path / "outside.yaml", tree / "apps/escape.yaml")
    os.symlink("../../outside.yaml", tree / "apps/escape2.yaml")
    with pytest.raises(InvalidRevision) as err:
        await LocalSource(name="dev", root=tree).snapshot()
    assert {c.field for c in err.value.causes} == {"apps/escape.yaml", "apps/escape2.yaml"}


async def test_huge_file_is_an_error(tree: Path) -> None:
    write(tree, "apps/big.yaml", b"x" * 100)
    with pytest.raises(InvalidRevision, match=r"apps/big\.yaml"):
        await LocalSource(name="dev", root=tree, max_file_size=50).snapshot()


async def test_changes_yield_after_debounced_edits(tree: Path) -> None:
    src = LocalSource(name="dev", root=tree, debounce_ms=50)
    first = await src.snapshot()
    changes = src.changes()
    waiter = asyncio.ensure_future(anext(changes))
    # watchfiles starts watching when the iterator first runs; keep editing until it sees it.
    for i in range(200):
        write(tree, "apps/a.yaml", f"kind: A{i}\n")
        write(tree, f"apps/new-{i % 3}.yaml", "kind: New\n")
        done, _ = await asyncio.wait({waiter}, timeout=0.1)
        if done:
            break
    assert waiter.done(), "no change reported by watchfiles"
    snap = await src.snapshot()
    assert snap.revision != first.revision
    assert "apps/new-0.yaml" in snap.files
    await src.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(changes), 10)


async def test_a_kustomization_brings_the_repository_tree_read_when_a_build_needs_it(
    tree: Path, tmp_path: Path
) -> None:
    write(tree, "overlays/dev/kustomization.yaml", "resources: [../../bases/app]\n")
    write(tree, "bases/app/kustomization.yaml", "resources: [cm.yaml]\n")
    write(tree, "bases/app/cm.yaml", "kind: ConfigMap\n")
    write(tree, "shared/app.properties", "color=blue\n")  # no manifest name: still in the tree
    write(tree, "shared/.sourceignore", "secret.txt\n")  # Flux's ignore file
    write(tree, "shared/secret.txt", "x\n")
    os.symlink(tmp_path, tree / "out")
    src = LocalSource(name="dev", root=tree, path="overlays/dev")
    snap = await src.snapshot()
    assert sorted(snap.files) == ["kustomization.yaml"]
    assert snap.tree is not None
    assert snap.tree.root == "overlays/dev"
    assert "shared/app.properties" in snap.tree.files
    assert "shared/secret.txt" not in snap.tree.files
    assert not any(p.startswith(".git/") for p in snap.tree.files)
    assert "leaves the repository" in snap.tree.refused["out"]
    assert snap.read_tree(["bases/app/cm.yaml", "shared/app.properties"]) == {
        "bases/app/cm.yaml": b"kind: ConfigMap\n",
        "shared/app.properties": b"color=blue\n",
    }
    # An edit of a base outside the path moves the revision.
    write(tree, "bases/app/cm.yaml", "kind: ConfigMap2\n")
    assert (await src.snapshot()).revision != snap.revision
    # Without a kustomization under the path, no tree is listed.
    plain = await LocalSource(name="dev", root=tree, path="apps").snapshot()
    assert plain.tree is None
