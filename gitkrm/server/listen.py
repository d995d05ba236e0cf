"""Where a server listens: `--listen HOST:PORT` parsed, and the socket bound, once for the
embedded API (`serve`, `run`) and the cluster target's probes. No uvicorn here: the CLI
checks `--listen` before it imports a server."""

from __future__ import annotations

import socket

from gitkrm.errors import BadRequest


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:6443` for IPv6); port 0 picks a free port."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise BadRequest(f"--listen {text!r}: expected HOST:PORT, as 127.0.0.1:6443")
    host = host.strip("[]")
    if not host:
        raise BadRequest(f"--listen {text!r}: the host is missing")
    p = int(port)
    if p > 65535:
        raise BadRequest(f"--listen {text!r}: the port must be at most 65535")
    return host, p


def bind(host: str, port: int, *, backlog: int = 2048) -> socket.socket:
    """A listening, non-blocking socket; BadRequest naming the address when it can't be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise BadRequest(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    sock.listen(backlog)
    sock.setblocking(False)
    return sock
