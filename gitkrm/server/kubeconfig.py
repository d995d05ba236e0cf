"""The kubeconfig gitkrm writes into its state dir so kubectl finds the embedded API."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Final

import yaml

NAME: Final = "gitkrm"


def kubeconfig_dict(
    *, server: str, token: str | None = None, ca_pem: bytes | None = None
) -> dict[str, object]:
    cluster: dict[str, str] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    user: dict[str, str] = {"token": token} if token else {}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": NAME, "cluster": cluster}],
        "users": [{"name": NAME, "user": user}],
        "contexts": [{"name": NAME, "context": {"cluster": NAME, "user": NAME}}],
        "current-context": NAME,
        "preferences": {},
    }


def write_kubeconfig(
    path: Path, *, server: str, token: str | None = None, ca_pem: bytes | None = None
) -> Path:
    """Write (atomically, mode 0600: it may hold the token) a kubeconfig for `server`."""
    text = yaml.safe_dump(kubeconfig_dict(server=server, token=token, ca_pem=ca_pem))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return path
