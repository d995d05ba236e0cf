"""Fixtures for the API server tests: a real server on 127.0.0.1 (a free port) per test
module, the real kubectl pointed at it, and an HTTP client."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from gitkrm.controllers import ControllerOptions
from gitkrm.server import ServeOptions, ServerThread
from gitkrm.server.context import Limits
from tests.support.builders import namespace
from tests.support.processes import close_pipes, end
from tests.support.tools import require_tool
from tests.support.wait import eventually

KUBECTL_DIR = Path("/usr/lib/google-cloud-sdk/bin")
KUBECTL = KUBECTL_DIR / "kubectl"  # 1.32 on these machines


def kubectl_path(version: str | None = None) -> Path:
    """The kubectl binary (`kubectl.1.NN` for a version): skips the test without it, or
    fails it under CI=true (tests.support.require_tool)."""
    name = f"kubectl.{version}" if version else "kubectl"
    return require_tool(name, candidates=[KUBECTL_DIR / name])


@dataclass
class Kubectl:
    """Runs the real kubectl against one server (own HOME, so its caches are private)."""

    binary: Path
    kubeconfig: Path
    home: Path

    def run(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        e = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
            **(env or {}),
        }
        proc = subprocess.run(
            [str(self.binary), *args],
            input=input,
            capture_output=True,
            text=True,
            env=e,
            timeout=60,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} exited {proc.returncode}\n"
                f"stdout: {proc.stdout}\nstderr: {proc.stderr}"
            )
        return proc

    def __call__(self, *args: str, input: str | None = None) -> str:
        return self.run(*args, input=input).stdout

    def popen(self, *args: str) -> subprocess.Popen[str]:
        e = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
        }
        return subprocess.Popen(
            [str(self.binary), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=e,
        )


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """One server (SQLite file store) shared by the tests of a module."""
    state = tmp_path_factory.mktemp("state")
    options = ServeOptions(port=0, state_dir=state, limits=Limits(stuck_watch_timeout=2.0))
    server = ServerThread(store_path=str(state / "store.db"), options=options)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def kubectl(api: ServerThread, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    assert api.bound is not None
    assert api.bound.kubeconfig is not None
    return Kubectl(
        binary=kubectl_path(), kubeconfig=api.bound.kubeconfig, home=tmp_path_factory.mktemp("home")
    )


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """kubectl against a server of its own that runs the bundled controllers (fast pods)."""
    state = tmp_path_factory.mktemp("state")
    server = ServerThread(
        store_path=str(state / "store.db"),
        options=ServeOptions(port=0, state_dir=state, limits=Limits(stuck_watch_timeout=2.0)),
        controllers=ControllerOptions(pod_start_delay=0.05, pod_run_duration=0.05),
    )
    with server:
        assert server.bound is not None
        assert server.bound.kubeconfig is not None
        yield Kubectl(
            binary=kubectl_path(),
            kubeconfig=server.bound.kubeconfig,
            home=tmp_path_factory.mktemp("home"),
        )


@pytest.fixture(scope="module")
def http(api: ServerThread) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api.url, timeout=10) as client:
        yield client


_counter = iter(range(1, 1_000_000))


@pytest.fixture
def ns(http: httpx.Client, request: pytest.FixtureRequest) -> str:
    """A namespace of the test's own (created through the API, not kubectl: faster)."""
    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    name = f"{name}-{next(_counter)}"
    r = http.post("/api/v1/namespaces", json=namespace(name))
    assert r.status_code == 201, r.text
    return name


class Lines:
    """The output lines of a running process, read by a thread (no select/readline
    races with Python's buffering)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self.lines)

    def stop(self, proc: subprocess.Popen[str]) -> None:
        """End the process, then the reader (at the end of the output) and the pipe."""
        end(proc)
        self._thread.join(10)  # the reader is at the end of the output
        close_pipes(proc)

    def wait(self, predicate: Callable[[list[str]], bool], timeout: float = 15.0) -> list[str]:
        found: list[str] = wait_for(
            lambda: (lines := self.snapshot()) and predicate(lines) and lines, timeout=timeout
        )
        return found


def wait_for(condition: Callable[[], Any], *, timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll `condition` until it returns something truthy (returned), or fail
    (tests.support.wait.eventually)."""
    return eventually(condition, timeout=timeout, interval=interval, message=repr(condition))


@contextlib.contextmanager
def gitkrm_serve(state: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A `gitkrm serve` process over `state` on a free loopback port (its kubeconfig in
    `state`), once it serves; stopped with SIGTERM (killed if it lingers) at the end."""
    serve = ["serve", "--state", str(state), "--listen", "127.0.0.1:0"]
    with log.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "gitkrm.cli.main", *serve], stderr=sink)
    try:
        wait_for(
            lambda: "gitkrm: serving" in log.read_text() or proc.poll() is not None, timeout=30
        )
        assert proc.poll() is None, log.read_text()
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
