"""gitkrm's own declaring objects: a GitSource in a synced revision read into a child."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from gitkrm.agent.config import SourceConfig
from gitkrm.agent.status import Outcome, Reason
from gitkrm.agent.tree.gitsource import FINALIZER, INTERPRETER
from gitkrm.agent.tree.model import ChildState, Phase
from gitkrm.agent.tree.naming import child_name
from gitkrm.errors import ManifestError
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.source import GitRef, HttpsAuth, RefKind, SecretRef

PARENT = SourceConfig(
    name="root",
    url="https://user:tok@git.example.com/org/repo.git",
    ref=GitRef(RefKind.BRANCH, "prod"),
    path="clusters/prod",
    auth=HttpsAuth(password=SecretRef(env="TOKEN")),
)


class Ctx:
    parent = PARENT

    async def get(self, ref: ObjectRef) -> Obj | None:
        return None

    async def list(
        self, gvk: GVK, *, namespace: str, label_selector: str | None = None
    ) -> Sequence[Obj]:
        return []


def declared(spec: dict[str, Any], *, namespace: str = "apps", name: str = "web") -> Obj:
    return {
        "apiVersion": "gitkrm.io/v1alpha1",
        "kind": "GitSource",
        "metadata": {"name": name, "namespace": namespace, "generation": 3},
        "spec": spec,
    }


async def test_dot_is_the_parents_repository_with_its_credentials_and_ref() -> None:
    spec = await INTERPRETER.child(
        declared({"url": ".", "path": "apps", "dependsOn": [{"name": "infra"}], "wait": True}),
        Ctx(),
    )
    config = spec.config
    ref = ObjectRef(group="gitkrm.io", kind="GitSource", name="web", namespace="apps")
    assert spec.declared_by == ref
    assert config.name == child_name(ref)
    assert config.url == PARENT.url  # the credentials of the flags kept
    assert config.auth == PARENT.auth
    assert config.ref == PARENT.ref
    assert config.path == "apps"
    assert spec.depends_on == (
        ObjectRef(group="gitkrm.io", kind="GitSource", name="infra", namespace="apps"),
    )
    assert spec.wait
    assert spec.finalizer == FINALIZER
    assert not spec.same_as_parent


async def test_the_parent_again_is_the_parent() -> None:
    same = await INTERPRETER.child(
        declared({"url": "https://git.example.com/org/repo", "path": "./clusters/prod/"}), Ctx()
    )
    assert same.same_as_parent
    other_ref = await INTERPRETER.child(
        declared({"url": ".", "path": "clusters/prod", "ref": {"branch": "main"}}), Ctx()
    )
    assert not other_ref.same_as_parent


async def test_another_repository_keeps_its_own_ref_and_no_credentials() -> None:
    spec = await INTERPRETER.child(
        declared({"url": "https://git.example.com/org/other.git", "ref": {"tag": "v1"}}), Ctx()
    )
    assert spec.config.url == "https://git.example.com/org/other.git"
    assert spec.config.ref == GitRef(RefKind.TAG, "v1")
    assert spec.config.auth is None


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (declared({"url": "."}, namespace="gitkrm-system"), "may not live in gitkrm-system"),
        (declared({"url": ".", "auth": {"passwordEnv": "X"}}), "spec.auth: files on the agent"),
        (declared({"url": "../other.git"}), "give '.', a URL, or an absolute path"),
        (declared({"url": "/srv/git/other.git"}), "only under a parent that is on this machine"),
        (declared({"url": ".", "interval": "soon"}), "GitSource apps/web: .*interval"),
    ],
)
async def test_refused(obj: Obj, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        await INTERPRETER.child(obj, Ctx())


async def test_a_local_parent_may_name_a_local_repository(tmp_path: Path) -> None:
    bare = tmp_path / "other.git"
    for d in ("objects", "refs"):
        (bare / d).mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")

    class Local(Ctx):
        parent = SourceConfig(name="root", url=str(tmp_path / "repo.git"))

    spec = await INTERPRETER.child(declared({"url": str(bare)}), Local())
    assert spec.config.url == str(bare)
    with pytest.raises(ManifestError, match="not a Git repository"):
        await INTERPRETER.child(declared({"url": str(tmp_path)}), Local())


def test_status_is_quiet_across_equal_states() -> None:
    obj = declared({"url": "."})
    ok = Outcome(revision="a" * 40, succeeded=True, reason=Reason.SUCCEEDED)
    first = INTERPRETER.status(obj, ChildState(phase=Phase.SYNCED, outcome=ok))
    assert {c["type"]: c["status"] for c in first["conditions"]} == {"Ready": "True"}
    assert first["lastSyncedRevision"] == "a" * 40
    obj["status"] = first
    assert INTERPRETER.status(obj, ChildState(phase=Phase.SYNCED, outcome=ok)) == first
    waiting = ObjectRef(group="gitkrm.io", kind="GitSource", name="infra", namespace="apps")
    pending = INTERPRETER.status(obj, ChildState(phase=Phase.PENDING, waiting_for=(waiting,)))
    ready = pending["conditions"][0]
    assert (ready["status"], ready["reason"]) == ("False", "DependencyNotReady")
    assert pending["waitingFor"] == ["GitSource apps/infra"]
