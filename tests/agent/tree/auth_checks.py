"""What every child given Git credentials by its interpreter must show."""

from __future__ import annotations

import stat

from gitkrm.agent.tree.model import ChildSpec
from gitkrm.source import HttpsAuth


def assert_basic_auth(spec: ChildSpec, *, username: str, password: str) -> None:
    """HTTPS basic auth: the password in a file only its owner reads, never in a repr."""
    auth = spec.config.auth
    assert isinstance(auth, HttpsAuth)
    assert auth.username == username
    assert auth.password.read() == password
    assert auth.password.file is not None
    assert stat.S_IMODE(auth.password.file.stat().st_mode) == 0o600
    assert password not in repr(spec)
