"""What the end-to-end tests share: the real `gitkrm` CLI as a subprocess, a long-lived
agent process that is always cleaned up, reads of its store, and waiting on conditions."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import yaml

from gitkrm.errors import GitkrmError, NotFound
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.server import ServeOptions, ServerThread
from gitkrm.store import Store, open_store
from tests.server.conftest import Kubectl, kubectl_path
from tests.source.source_gitrepo import ENV
from tests.support.net import free_port
from tests.support.running import Running
from tests.support.wait import eventually, eventually_async

CM = GVK(group="", version="v1", kind="ConfigMap")
DEPLOY = GVK(group="apps", version="v1", kind="Deployment")
GITSOURCE = GVK(group="gitkrm.io", version="v1alpha1", kind="GitSource")


def gitkrm_command() -> list[str]:
    """The installed console script next to this interpreter (else `python -m`)."""
    script = Path(sys.executable).parent / "gitkrm"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "gitkrm.cli.main"]


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {**ENV, "PYTHONUNBUFFERED": "1", **(extra or {})}


def gitkrm(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run `gitkrm ARGS` to completion; stdout and stderr captured as text."""
    return subprocess.run(
        [*gitkrm_command(), *args],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_tree(
    repo: str, state: Path, *extra: str, path: str, interpret: str, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """`gitkrm run --once --interpret PEER` of `path` of `repo` (a URL or a path) as the
    agent `e2e`."""
    return gitkrm(
        "run", "--once", "--repo", repo, "--path", path, "--state", str(state),
        "--agent-name", "e2e", "--interpret", interpret, *extra, cwd=state.parent,
        timeout=timeout,
    )  # fmt: skip


def run_bootstrap(
    repo: str, state: Path, *extra: str, interpret: str = "argocd"
) -> subprocess.CompletedProcess[str]:
    """`run_tree` of `bootstrap/`."""
    return run_tree(repo, state, *extra, path="bootstrap", interpret=interpret, timeout=120)


def store_url(state: Path) -> str:
    return "sqlite:///" + str((state / "store.db").resolve())


def _ensure_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


async def writer(state: Path) -> Store:
    """The store as its writer (only while no agent runs on it): for live edits."""
    _ensure_dir(state)
    return await open_store(store_url(state))


async def reader(state: Path) -> Store:
    return await open_store(store_url(state), read_only=True)


@contextlib.asynccontextmanager
async def _closing(opened: Awaitable[Store]) -> AsyncIterator[Store]:
    store = await opened
    try:
        yield store
    finally:
        await store.close()


def reading(state: Path) -> contextlib.AbstractAsyncContextManager[Store]:
    """The state's store, read-only, for an `async with` block; closed after it."""
    return _closing(reader(state))


def writing(state: Path) -> contextlib.AbstractAsyncContextManager[Store]:
    """`writer` for an `async with` block; closed after it."""
    return _closing(writer(state))


def cm_ref(name: str, namespace: str = "default") -> ObjectRef:
    return ObjectRef(group="", kind="ConfigMap", name=name, namespace=namespace)


async def get_or_none(store: Store, ref: ObjectRef) -> Obj | None:
    try:
        return await store.get(ref)
    except NotFound:
        return None


async def names(store: Store, gvk: GVK, *, source: str | None = None) -> set[str]:
    """`namespace/name` of every object of a kind (managed by `source`, when given)."""
    selector = f"gitkrm.io/source={source}" if source else None
    listed = await store.list(gvk, label_selector=selector)
    return {
        f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in listed["items"]
    }


async def gitsource_status(store: Store, name: str = "default") -> dict[str, Any]:
    ref = ObjectRef(group="gitkrm.io", kind="GitSource", name=name, namespace="gitkrm-system")
    obj = await get_or_none(store, ref)
    return dict((obj or {}).get("status") or {})


async def store_ready(state: Path) -> bool:
    """Whether a reader can open the store yet (its writer may still be creating it)."""
    if not (state / "store.db").exists():
        return False
    try:
        store = await reader(state)
    except (sqlite3.Error, GitkrmError):
        return False
    await store.close()
    return True


async def read_object(state: Path, ref: ObjectRef) -> Obj | None:
    """One object of the state's store (None while the store or the object does not exist)."""
    if not await store_ready(state):
        return None
    async with reading(state) as store:
        return await get_or_none(store, ref)


async def read_each(state: Path, *refs: ObjectRef) -> list[Obj | None]:
    """Objects of the state's store through one reader (None for each that is absent)."""
    async with reading(state) as store:
        return [await get_or_none(store, r) for r in refs]


def read_objects(state: Path, *refs: ObjectRef) -> list[Obj]:
    """Objects of the state's store, from a test outside an event loop; each must exist
    (the failure names the ones that do not)."""

    found = asyncio.run(read_each(state, *refs))
    missing = [r for r, obj in zip(refs, found, strict=True) if obj is None]
    assert not missing, f"not in the store: {missing}"
    return [obj for obj in found if obj is not None]


def object_ref(kind: str, name: str, ns: str | None, group: str = "") -> ObjectRef:
    return ObjectRef(group=group, kind=kind, name=name, namespace=ns)


async def read_status(state: Path, name: str = "default") -> dict[str, Any]:
    """A GitSource's status ({} while there is none)."""
    ref = ObjectRef(group="gitkrm.io", kind="GitSource", name=name, namespace="gitkrm-system")
    obj = await read_object(state, ref)
    return dict((obj or {}).get("status") or {})


async def wait_for(
    cond: Callable[[], Awaitable[bool]], *, within: float = 30.0, what: str = "condition"
) -> None:
    """Poll `cond` until it holds; fail naming `what` after `within` seconds
    (tests.support.wait.eventually_async)."""
    await eventually_async(cond, timeout=within, interval=0.05, message=what)


async def wait_synced(state: Path, revision: str, *, what: str, within: float = 30.0) -> None:
    """Wait until the GitSource `default` in the state's store has synced `revision`."""

    async def synced() -> bool:
        return (await read_status(state)).get("lastSyncedRevision") == revision

    await wait_for(synced, within=within, what=what)


def start(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    """`gitkrm ARGS` in the background, in a process group of its own (killed as a whole)."""
    return subprocess.Popen(
        [*gitkrm_command(), *args],
        cwd=cwd,
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


class AgentProcess(Running):
    """`gitkrm run ...` in the background, its log in a file; stopped (or killed) on exit."""

    def __init__(
        self, *args: str, cwd: Path, log: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.args = args
        self.log_path = log
        self._log = log.open("wb")
        self.proc = subprocess.Popen(
            [*gitkrm_command(), *args],
            cwd=cwd,
            env=cli_env(env),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def records(self) -> list[dict[str, Any]]:
        """The JSON log records so far (with --log-format json)."""
        out = []
        for line in self.log().splitlines():
            if line.startswith("{"):
                try:
                    out.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    continue  # a line being written
        return out

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, then wait (SIGKILL if it does not stop in time)."""
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()
        return self.proc.returncode

    def kill(self) -> None:
        kill_session(self.proc)
        self._log.close()


def kill_session(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL to every process of its session (as a container runtime kills), then reaped."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def run_agent(
    *args: str, state: Path, tmp_path: Path, interval: str = "1h", port: int | None = None
) -> AgentProcess:
    """`gitkrm run ARGS` as a long-lived agent of `state`, listening on loopback (`port`, or
    a free one); its log in tmp_path/agent.log."""
    return AgentProcess(
        "run",
        *args,
        "--state",
        str(state),
        "--interval",
        interval,
        "--listen",
        f"127.0.0.1:{port or free_port()}",
        cwd=tmp_path,
        log=tmp_path / "agent.log",
    )


@contextlib.contextmanager
def bootstrap_agent(
    repo: str, state: Path, tmp_path: Path, *, interval: str, interpret: str = "argocd"
) -> Iterator[AgentProcess]:
    """`run_bootstrap`'s sync as a long-lived agent (its log in tmp_path/agent.log), once it
    serves its API: it writes the kubeconfig after making its store (read before that, a
    half-made store.db has no tables yet)."""
    with AgentProcess(
        "run", "--repo", repo, "--path", "bootstrap", "--state", str(state),
        "--agent-name", "e2e", "--interpret", interpret, "--interval", interval,
        "--listen", "127.0.0.1:0", cwd=tmp_path, log=tmp_path / "agent.log",
    ) as agent:  # fmt: skip
        eventually(lambda: (state / "kubeconfig").exists(), timeout=60,
                   message="the agent serving its API")  # fmt: skip
        yield agent


def json_agent(
    url: str, *, state: Path, tmp_path: Path, interval: str = "1h", port: int | None = None
) -> AgentProcess:
    """`run_agent` of the repository at `url` as the agent `e2e`, logging JSON records
    (read them with AgentProcess.records)."""
    return run_agent(
        "--repo", url, "--agent-name", "e2e", "--log-format", "json",
        state=state, tmp_path=tmp_path, interval=interval, port=port,
    )  # fmt: skip


def api_patch(server: str, path: str, patch: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch through the agent's Kubernetes API (as `kubectl patch --type merge`)."""
    req = urllib.request.Request(
        server + path,
        data=orjson.dumps(patch),
        method="PATCH",
        headers={"Content-Type": "application/merge-patch+json", "Accept": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as res:
        out: dict[str, Any] = orjson.loads(res.read())
        return out


def kubeconfig_server(state: Path) -> str:
    """The API server URL the agent wrote into `<state>/kubeconfig`."""
    config = yaml.safe_load((state / "kubeconfig").read_text())
    server: str = config["clusters"][0]["cluster"]["server"]
    return server


@contextlib.contextmanager
def api_of(state: Path, tmp_path: Path) -> Iterator[Kubectl]:
    """kubectl against an API server over the agent's store (the store has one writer: the
    server runs between `gitkrm run --once` runs)."""
    with ServerThread(
        store_path=str(state / "store.db"), options=ServeOptions(port=0, state_dir=tmp_path / "api")
    ) as api:
        assert api.bound is not None
        assert api.bound.kubeconfig is not None
        yield Kubectl(binary=kubectl_path(), kubeconfig=api.bound.kubeconfig, home=tmp_path / "h")
