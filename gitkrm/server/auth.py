"""Bearer-token authentication (required whenever the server listens beyond loopback)."""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Final

from gitkrm.errors import BadRequest, Unauthorized

# What kube-apiserver lets anonymous clients read (system:public-info-viewer).
PUBLIC_PATHS: Final = frozenset({"/healthz", "/livez", "/readyz", "/version"})


def load_token(path: Path) -> str:
    """The token in a file (surrounding whitespace ignored); BadRequest when unusable."""
    try:
        token = path.read_text().strip()
    except OSError as e:
        raise BadRequest(f"--token-file {path}: {e.strerror or e}") from None
    if not token:
        raise BadRequest(f"--token-file {path} is empty")
    if any(c.isspace() for c in token):
        raise BadRequest(f"--token-file {path}: the token must not contain whitespace")
    return token


class TokenAuth:
    """Checks `Authorization: Bearer <token>` in constant time."""

    def __init__(self, token: str) -> None:
        self._expected = ("Bearer " + token).encode()

    def check(self, authorization: bytes | None) -> None:
        if authorization is None or not hmac.compare_digest(authorization, self._expected):
            raise Unauthorized("Unauthorized")
