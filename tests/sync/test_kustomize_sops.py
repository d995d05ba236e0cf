"""Decrypted kustomize inputs are served through FIFOs, never written to a file: each
reader gets the plaintext once, a second open gets it again, and nothing is left."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

from gitkrm.sync.kustomize_sops import _inputs, fed


def test_fifos_serve_each_reader_once_and_hold_nothing(tmp_path: Path) -> None:
    data = b"PASS=fifo-Secret-1\n" * 5000  # more than a pipe's buffer
    with fed(tmp_path, {"app/creds.env": data}):
        path = tmp_path / "app" / "creds.env"
        assert stat.S_ISFIFO(path.stat().st_mode)
        assert path.read_bytes() == data
        assert path.read_bytes() == data  # kustomize may open a file twice
    assert stat.S_ISFIFO(path.stat().st_mode)  # never a regular file
    assert not [t for t in threading.enumerate() if t.name.startswith("Thread") and t.is_alive()]


def test_an_unread_fifo_does_not_hang_the_build(tmp_path: Path) -> None:
    with fed(tmp_path, {"unused.env": b"X=1\n"}):
        pass  # kustomize never opened it: the feeder still ends


def test_inputs_follow_flux_decrypt_sources() -> None:
    k = (
        b"secretGenerator:\n- name: a\n  envs: [a.env, b]\n  files: [k.json=f.bin, plain.txt]\n"
        b"patches:\n- path: p.yaml\n- patch: inline\n"
    )
    assert _inputs("app/kustomization.yaml", k) == [
        ("app/f.bin", "k.json"),
        ("app/plain.txt", "plain.txt"),
        ("app/a.env", "a.env"),
        ("app/b", "b.env"),
        ("app/p.yaml", "p.yaml"),
    ]
