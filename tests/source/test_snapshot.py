from __future__ import annotations

import subprocess

import pytest

from gitkrm.errors import NotFound
from gitkrm.source.snapshot import (
    FileEntry,
    MemoryBlobs,
    Snapshot,
    git_blob_id,
    listing_revision,
)


def test_blob_id_matches_git_hash_object() -> None:
    data = b"apiVersion: v1\nkind: ConfigMap\n"
    out = subprocess.run(
        ["git", "hash-object", "--stdin"], input=data, capture_output=True, check=True
    )
    assert git_blob_id(data) == out.stdout.decode().strip()


def make(files: dict[str, bytes], revision: str = "r") -> Snapshot:
    entries = {p: FileEntry(p, git_blob_id(c), len(c)) for p, c in files.items()}
    blobs = MemoryBlobs({git_blob_id(c): c for c in files.values()})
    return Snapshot(revision=revision, files=entries, reader=blobs)


def test_changed_paths_by_blob_and_mode() -> None:
    old = make({"a": b"1", "b": b"2", "c": b"3"})
    new = make({"a": b"1", "b": b"changed", "d": b"4"})
    assert new.changed_paths(old) == {"b", "c", "d"}
    assert new.changed_paths(None) == {"a", "b", "d"}
    exe = Snapshot(
        revision="x",
        files={**old.files, "a": FileEntry("a", git_blob_id(b"1"), 1, 0o100755)},
        reader=MemoryBlobs({}),
    )
    assert exe.changed_paths(old) == {"a"}


def test_read_and_missing_paths() -> None:
    snap = make({"a.yaml": b"x", "b.yaml": b"x"})
    assert snap.read_many(["a.yaml", "b.yaml"]) == {"a.yaml": b"x", "b.yaml": b"x"}
    with pytest.raises(NotFound, match=r"nope\.yaml"):
        snap.read("nope.yaml")
    with pytest.raises(TypeError):
        snap.files["new"] = FileEntry("new", "0", 0)  # type: ignore[index]


def test_listing_revision_depends_on_paths_and_blobs() -> None:
    a = make({"a": b"1"}).files
    assert listing_revision(a) == listing_revision(dict(a))
    assert listing_revision(a) != listing_revision(make({"b": b"1"}).files)
    assert listing_revision(a) != listing_revision(make({"a": b"2"}).files)
