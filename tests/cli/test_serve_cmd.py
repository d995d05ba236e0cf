"""`gitkrm serve` as a user runs it: a process that serves the state dir's store and
writes a kubeconfig kubectl can use; refusal to listen beyond loopback unprotected."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gitkrm.cli.main import main
from tests.support.processes import stop

KUBECTL = Path("/usr/lib/google-cloud-sdk/bin/kubectl")


def test_serve_then_kubectl_then_sigterm(tmp_path: Path) -> None:
    state = tmp_path / "state"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gitkrm.cli.main",
            "serve",
            "--state",
            str(state),
            "--listen",
            "127.0.0.1:0",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("gitkrm: serving http://127.0.0.1:"), line
        kubeconfig = state / "kubeconfig"
        assert kubeconfig.is_file()
        assert (state / "store.db").is_file()
        if KUBECTL.exists():
            env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}

            def listed(resource: str) -> list[str]:
                """The names kubectl lists of `resource` through the served API."""
                out = subprocess.run(
                    [str(KUBECTL), "get", resource, "-o", "json"],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                    timeout=60,
                ).stdout
                return [n["metadata"]["name"] for n in json.loads(out)["items"]]

            assert "kube-system" in listed("namespaces")
            # The bundled controllers run next to the API: their simulated nodes are there.
            assert listed("nodes") == ["gitkrm-node-0", "gitkrm-node-1", "gitkrm-node-2"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        stop(proc)


def test_refuses_other_addresses_without_a_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["serve", "--state", str(tmp_path), "--listen", "0.0.0.0:0"])
    assert code == 2
    err = capsys.readouterr().err
    assert "refusing to listen on 0.0.0.0" in err
    assert "--token-file" in err


def test_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--state", str(tmp_path), "--listen", "nope"]) == 2
    assert "expected HOST:PORT" in capsys.readouterr().err
    cert = tmp_path / "c.pem"
    cert.write_text("x")
    assert main(["serve", "--state", str(tmp_path), "--tls-cert", str(cert)]) == 2
    assert "go together" in capsys.readouterr().err
    assert main(["serve", "--state", str(tmp_path), "--token-file", str(tmp_path / "nope")]) == 2
    assert "--token-file" in capsys.readouterr().err
