"""An sshd of our own on 127.0.0.1 (a free port, its own host key and authorized_keys),
serving git over SSH for the test's user; stopped when the block ends."""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from tests.support.tools import require_tool

SSHD = "/usr/sbin/sshd"


def require_tools() -> None:
    """Skip the calling test without sshd, ssh or ssh-keygen (fail it under CI=true)."""
    require_tool("sshd", candidates=[SSHD], search_path=False, what="openssh-server (sshd)")
    require_tool("ssh", what="openssh-client (ssh)")
    require_tool("ssh-keygen", what="openssh-client (ssh-keygen)")


def keygen(path: Path) -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gitkrm-test", "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Sshd:
    def __init__(self, workdir: Path) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.dir = workdir
        self.user = getpass.getuser()
        self.host_key = keygen(workdir / "host_key")
        self.client_key = keygen(workdir / "client_key")
        (workdir / "authorized_keys").write_text(
            (workdir / "client_key.pub").read_text(), encoding="utf-8"
        )
        self.port = _free_port()
        host_pub = (workdir / "host_key.pub").read_text().split()
        self.known_hosts = workdir / "known_hosts"
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {host_pub[0]} {host_pub[1]}\n")
        self.config = workdir / "sshd_config"
        self.config.write_text(
            "\n".join(
                [
                    f"ListenAddress 127.0.0.1:{self.port}",
                    f"HostKey {self.host_key}",
                    f"AuthorizedKeysFile {workdir / 'authorized_keys'}",
                    f"PidFile {workdir / 'sshd.pid'}",
                    f"AllowUsers {self.user}",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin prohibit-password",
                    "StrictModes no",
                    "UsePAM no",
                    "LogLevel ERROR",
                    "",
                ]
            )
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, path: Path) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Sshd:
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation dir
        with open(self.dir / "sshd.log", "wb") as log:  # the child keeps its own copy
            self.proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.dir / 'sshd.log').read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    if s.recv(4).startswith(b"SSH-"):
                        return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError("sshd did not start listening within 10s")
            time.sleep(0.05)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
