"""An sshd of our own on 127.0.0.1 (a free port, its own host key and authorized_keys),
serving git over SSH for the test's user; stopped when the block ends."""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
from pathlib import Path

from tests.support.net import free_port
from tests.support.processes import end
from tests.support.running import Running
from tests.support.tools import require_tool
from tests.support.wait import eventually

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


class Sshd(Running):
    def __init__(self, workdir: Path) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.dir = workdir
        self.user = getpass.getuser()
        self.host_key = keygen(workdir / "host_key")
        self.client_key = keygen(workdir / "client_key")
        (workdir / "authorized_keys").write_text(
            (workdir / "client_key.pub").read_text(), encoding="utf-8"
        )
        self.port = free_port()
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

    def start(self) -> None:
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation dir
        with open(self.dir / "sshd.log", "wb") as log:  # the child keeps its own copy
            proc = self.proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )

        def listening() -> bool:
            if proc.poll() is not None:  # not AssertionError: eventually() would retry it
                raise RuntimeError(f"sshd exited: {(self.dir / 'sshd.log').read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    return s.recv(4).startswith(b"SSH-")
            except OSError:
                return False

        try:
            eventually(listening, timeout=10, interval=0.05, message="sshd to greet on its port")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.proc is not None:
            end(self.proc)
            self.proc = None
