"""Bad input and faults against one long-lived agent (the real CLI, as a process).

Each fault is a commit (or a change to the remote or the cache) that must give a clear error
in the GitSource status and the log, apply nothing from the bad revision (a marker ConfigMap
changed in the same commit keeps its old value), and leave the agent running; the next good
commit is applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.e2e_support import (
    AgentProcess,
    cm_ref,
    json_agent,
    read_object,
    read_status,
    run_agent,
    wait_for,
)
from tests.e2e.manifests import configmap, deployment, gitsource
from tests.source.source_gitrepo import RemoteRepo, git
from tests.source.source_https import GitHttpsServer, require_tools

BOMB = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: bomb, namespace: default}
data:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
  i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""

MISMATCH = deployment("mismatch", image="nginx:1", selector={"matchLabels": {"app": "other"}})


@dataclass(frozen=True)
class Fault:
    name: str
    files: dict[str, str | bytes] = field(default_factory=dict)
    symlinks: dict[str, str] = field(default_factory=dict)
    expect: tuple[str, ...] = ()


CONTENT_FAULTS = [
    Fault("invalid YAML", {"bad.yaml": "a: [1, 2\nb: {\n"}, expect=("bad.yaml:",)),
    Fault("YAML bomb", {"bomb.yaml": BOMB}, expect=("bomb.yaml", "alias")),
    Fault(
        "duplicate keys",
        {"dup.yaml": configmap("dup", {"a": "1"}) + "data: {b: '2'}\n"},
        expect=("dup.yaml:", "data"),
    ),
    Fault(
        "duplicate objects",
        {"one.yaml": configmap("twice", {"a": "1"}), "two.yaml": configmap("twice", {"a": "2"})},
        expect=("one.yaml:1", "two.yaml:1", "twice"),
    ),
    Fault(
        "unknown kind",
        {"widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"},
        expect=("widget.yaml:1", "Widget"),
    ),
    Fault(
        "schema-invalid field",
        {"web.yaml": deployment("web", image="nginx:1").replace("replicas: 2", "replicas: two")},
        expect=("web.yaml:1", "replicas"),
    ),
    Fault(
        "selector that does not match its template",
        {"mismatch.yaml": MISMATCH},
        expect=("mismatch.yaml:1", "selector"),
    ),
    Fault(
        "cluster-scoped object with a namespace",
        {
            "role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
            "metadata: {name: reader, namespace: default}\nrules: []\n"
        },
        expect=("role.yaml:1", "namespace"),
    ),
    Fault(
        "namespace that exists nowhere",
        {"ghost.yaml": configmap("boo", {"a": "1"}, namespace="ghost")},
        expect=("ghost.yaml:1", "ghost"),
    ),
    Fault(
        "symlink out of the repository",
        symlinks={"escape.yaml": "/etc/hostname"},
        expect=("escape.yaml",),
    ),
    Fault(
        "huge file",
        {"huge.yaml": "# " + "x" * (9 * 1024 * 1024) + "\n"},
        expect=("huge.yaml",),
    ),
    Fault("binary file", {"blob.yaml": b"\x00\xff\xfebinary\x00\x01"}, expect=("blob.yaml",)),
    Fault(
        "non-UTF-8 file",
        {"latin.yaml": "data:\n  a: caf\xe9\n".encode("latin-1")},
        expect=("latin.yaml",),
    ),
]


class Harness:
    """A repo, an agent on it, and checks of what the agent did."""

    def __init__(self, repo: RemoteRepo, state: Path, agent: AgentProcess) -> None:
        self.repo = repo
        self.state = state
        self.agent = agent
        self.marker = 0

    def commit_marker(self, message: str) -> str:
        self.marker += 1
        self.repo.write("marker.yaml", configmap("marker", {"v": str(self.marker)}))
        return self.repo.commit(message)

    async def status(self) -> dict[str, Any]:
        return await read_status(self.state)

    async def marker_value(self) -> str | None:
        obj = await read_object(self.state, cm_ref("marker"))
        return None if obj is None else str(obj["data"]["v"])

    async def wait_synced(self, revision: str, what: str) -> None:
        async def synced() -> bool:
            s = await self.status()
            return s.get("lastSyncedRevision") == revision and s.get("result") == "Succeeded"

        await wait_for(synced, within=60, what=f"{what}: revision {revision[:12]} synced")
        assert await self.marker_value() == str(self.marker)

    async def wait_failed(self, what: str, *, revision: str | None = None) -> dict[str, Any]:
        async def failed() -> bool:
            s = await self.status()
            if s.get("result") != "Failed":
                return False
            return revision is None or s.get("lastAttemptedRevision") == revision

        await wait_for(failed, within=60, what=f"{what}: the sync to fail")
        assert self.agent.alive, f"{what}: the agent stopped:\n{self.agent.log()}"
        return await self.status()


async def test_bad_input_is_refused_and_the_agent_recovers(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    repo.write("base.yaml", configmap("base", {"a": "1"}))
    agent = json_agent(repo.url, state=state, tmp_path=tmp_path, interval="1s")
    with agent:
        h = Harness(repo, state, agent)
        good = h.commit_marker("good")
        repo.push()
        await h.wait_synced(good, "first sync")

        for fault in CONTENT_FAULTS:
            last_good = h.marker
            for path, content in fault.files.items():
                repo.write(path, content)
            for path, target in fault.symlinks.items():
                repo.symlink(path, target)
            bad = h.commit_marker(f"bad: {fault.name}")
            repo.push()
            status = await h.wait_failed(fault.name, revision=bad)
            errors = "\n".join(str(e) for e in status.get("errors", []))
            for snippet in fault.expect:
                assert snippet in errors, f"{fault.name}: {snippet!r} not in:\n{errors}"
            assert status["lastSyncedRevision"] == good, fault.name
            assert await h.marker_value() == str(last_good), f"{fault.name}: applied anyway"
            for path in [*fault.files, *fault.symlinks]:
                git("rm", "-q", path, cwd=repo.work)
            good = h.commit_marker(f"fix: {fault.name}")
            repo.push()
            await h.wait_synced(good, f"after {fault.name}")

        # A force-pushed branch is followed: the rewritten history is synced.
        dropped = h.commit_marker("to be rewritten")
        repo.push()
        await h.wait_synced(dropped, "before the force-push")
        git("reset", "-q", "--hard", "HEAD~1", cwd=repo.work)
        h.marker -= 1
        repo.write("rewritten.yaml", configmap("rewritten", {"a": "1"}))
        rewritten = h.commit_marker("rewritten history")
        repo.push(force=True)
        await h.wait_synced(rewritten, "force-push")
        assert await read_object(state, cm_ref("rewritten")) is not None

        # A deleted branch is an error that keeps the last synced state.
        git("update-ref", "-d", "refs/heads/main", cwd=repo.bare)
        status = await h.wait_failed("deleted branch")
        assert "deleted on the remote" in str(status["lastError"])
        assert await h.marker_value() == str(h.marker)
        back = h.commit_marker("branch is back")
        repo.push()
        await h.wait_synced(back, "branch pushed again")

        # An unreachable remote: the same; the agent recovers once it is back.
        away = repo.bare.with_name("moved.git")
        repo.bare.rename(away)
        status = await h.wait_failed("unreachable remote")
        assert str(away) not in str(status["lastError"])
        away.rename(repo.bare)
        reachable = h.commit_marker("reachable again")
        repo.push()
        await h.wait_synced(reachable, "remote reachable again")

        # A corrupted cache is wiped and cloned again.
        cache = state / "git" / "default"
        for f in (cache / "objects").rglob("*"):
            if f.is_file():
                f.chmod(0o644)
                f.write_bytes(b"garbage")
        repaired = h.commit_marker("after the cache was corrupted")
        repo.push()
        await h.wait_synced(repaired, "corrupted cache")

        assert agent.alive
        records = agent.records()
        syncs = [r for r in records if r.get("msg") == "sync"]
        assert any(r["result"] == "Failed" for r in syncs)
        assert all(
            {"revision", "git_ms", "render_ms", "diff_ms", "apply_ms"} <= r.keys() for r in syncs
        )
    assert agent.proc.returncode == 0, agent.log()


async def test_wrong_credentials_then_fixed(tmp_path: Path) -> None:
    require_tools()
    projects = tmp_path / "srv"
    repo = RemoteRepo(projects / "apps")
    repo.write("a.yaml", configmap("a", {"v": "1"}))
    head = repo.commit("a")
    repo.push()
    (projects / "apps.git").symlink_to(repo.bare)
    password = tmp_path / "password"
    password.write_text("wrong-password-123\n")
    state = tmp_path / "state"
    certs = tmp_path / "certs"
    certs.mkdir()
    with GitHttpsServer(
        projects, username="bot", password="right-password-456", certs=certs
    ) as srv:
        config = tmp_path / "sources.yaml"
        config.write_text(
            gitsource(
                "default",
                srv.url("apps.git"),
                auth={"username": "bot", "passwordFile": str(password)},
                caFile=str(srv.cert),
            )
        )
        agent = run_agent("--config", str(config), state=state, tmp_path=tmp_path, interval="1s")
        with agent:
            h = Harness(repo, state, agent)
            status = await h.wait_failed("wrong credentials")
            error = str(status["lastError"])
            assert "auth" in error.lower() or "401" in error, error
            assert await h.marker_value() is None
            password.write_text("right-password-456\n")  # read again at every use

            async def applied() -> bool:
                s = await h.status()
                return s.get("lastSyncedRevision") == head

            await wait_for(applied, within=60, what="the sync with the right password")
            log = agent.log()
        for secret in ("wrong-password-123", "right-password-456"):
            assert secret not in log
            assert secret not in str(await h.status())
        assert agent.proc.returncode == 0
