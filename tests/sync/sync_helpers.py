"""Helpers for the sync tests: in-memory snapshots, a Git remote to commit to, manifests."""

from __future__ import annotations

from collections.abc import Mapping

from gitkrm.source.snapshot import FileEntry, MemoryBlobs, RepoTree, Snapshot, git_blob_id
from gitkrm.sync.desired import Desired, desired_of
from gitkrm.sync.parse import ParseContext, builtin_registry, parse_file
from tests.source.source_gitrepo import RemoteRepo, git


def snapshot(files: Mapping[str, str | bytes], revision: str = "rev-1") -> Snapshot:
    """A snapshot held in memory, as a plain-directory source builds it."""
    entries: dict[str, FileEntry] = {}
    blobs: dict[str, bytes] = {}
    for path, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        blob = git_blob_id(data)
        entries[path] = FileEntry(path=path, blob=blob, size=len(data))
        blobs[blob] = data
    return Snapshot(revision=revision, files=entries, reader=MemoryBlobs(blobs))


def tree_snapshot(files: Mapping[str, str], root: str) -> Snapshot:
    """A snapshot of the source path `root` of a repository of `files` (repository paths),
    with the whole repository as its `RepoTree`, as a source lists it for kustomize."""
    whole = snapshot(files)
    mine = {
        p[len(root) + 1 :]: FileEntry(path=p[len(root) + 1 :], blob=e.blob, size=e.size)
        for p, e in whole.files.items()
        if p.startswith(root + "/")
    }
    blobs = {e.blob: whole.read(p) for p, e in whole.files.items()}
    return Snapshot(
        revision="r1", files=mine, reader=MemoryBlobs(blobs), tree=RepoTree(root, whole.files)
    )


class Remote(RemoteRepo):
    """A RemoteRepo whose every commit (and revert) is pushed at once."""

    def commit(self, message: str = "change", *, env: dict[str, str] | None = None) -> str:
        sha = super().commit(message, env=env)
        self.push()
        return sha

    def revert_head(self) -> str:
        git("revert", "--no-edit", "HEAD", cwd=self.work)
        self.push()
        return self.head()


def namespace(name: str) -> str:
    return f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"


def configmap(name: str, ns: str = "apps", data: str = "a: '1'", extra: str = "") -> str:
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
        f"{extra}data:\n  {data}\n"
    )


def deployment(
    name: str = "web",
    ns: str = "apps",
    *,
    replicas: int = 2,
    image: str = "nginx:1",
    annotations: str = "",
    extra_spec: str = "",
) -> str:
    ann = f"  annotations:\n{annotations}" if annotations else ""
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
{ann}spec:
  replicas: {replicas}
{extra_spec}  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: web
        image: {image}
"""


def desired(text: str, *, source: str = "src", path: str = "m.yaml") -> list[Desired]:
    """The desired objects of one manifest file (which must be valid)."""
    ctx = ParseContext(source=source, default_namespace="apps")
    pf = parse_file(path, text.encode(), ctx=ctx, registry=builtin_registry())
    assert pf.error is None, pf.error
    out: list[Desired] = []
    for po in pf.objects:
        assert po.resolved
        assert not po.problems, po.problems
        d, problems = desired_of(po, path=path)
        assert d is not None, problems
        out.append(d)
    return out
