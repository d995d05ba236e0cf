"""Loopback ports for servers a test starts (or for a URL nothing answers on)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port nothing listens on: bound to port 0, read, then released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
