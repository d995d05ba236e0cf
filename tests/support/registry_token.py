"""A registry that asks for Bearer tokens (distribution's `auth: token`), with the token
service it names: Debian's docker-registry verifies the JWTs (RS256, the signing
certificate in `x5c`, checked against its `rootcertbundle`), and a small token service on
loopback issues them to a client presenting the right Basic credentials, for the scope the
registry's `WWW-Authenticate` challenge asked. This is the flow of ghcr.io or Docker Hub.
"""

from __future__ import annotations

import base64
import datetime
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from tests.support.registry import Registry, start_registry, stop_registry

ISSUER = "gitkrm-test-token-issuer"
SERVICE = "gitkrm-test-registry"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenService:
    """Issues tokens to `username`/`password`; counts what it issued."""

    def __init__(self, directory: Path, *, username: str, password: str) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ISSUER)])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )  # fmt: skip
        directory.mkdir(parents=True, exist_ok=True)
        self.bundle = directory / "token-root.pem"
        self.bundle.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        self.credentials = (username, password)
        self.issued: list[str] = []  # the scopes tokens were issued for

    def token(self, scope: str) -> str:
        der = self.cert.public_bytes(serialization.Encoding.DER)
        header = {"alg": "RS256", "typ": "JWT", "x5c": [base64.b64encode(der).decode()]}
        access = []
        if scope.startswith("repository:"):
            _, name, actions = scope.split(":", 2)
            access.append({"type": "repository", "name": name, "actions": actions.split(",")})
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": self.credentials[0], "aud": SERVICE, "exp": now + 300,
                  "nbf": now - 10, "iat": now, "jti": str(now), "access": access}  # fmt: skip
        signing = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        sig = self.key.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
        self.issued.append(scope)
        return f"{signing}.{_b64(sig)}"

    def handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                basic = self.headers.get("Authorization", "").removeprefix("Basic ")
                pair = base64.b64decode(basic).decode() if basic else ""
                if pair != ":".join(service.credentials):
                    self.send_response(401)
                    self.end_headers()
                    return
                body = json.dumps({"token": service.token(query.get("scope", [""])[0])})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@contextmanager
def token_registry(
    directory: Path, *, username: str, password: str
) -> Iterator[tuple[Registry, TokenService]]:
    """A registry behind the token flow; pushes need a token too."""
    service = TokenService(directory, username=username, password=password)
    server = ThreadingHTTPServer(("127.0.0.1", 0), service.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    realm = f"http://127.0.0.1:{server.server_address[1]}/token"
    auth = (f"auth:\n  token:\n    realm: {realm}\n    service: {SERVICE}\n"
            f"    issuer: {ISSUER}\n    rootcertbundle: {service.bundle}\n")  # fmt: skip
    proc, registry = start_registry(directory / "registry", auth=auth)
    try:
        yield registry, service
    finally:
        stop_registry(proc)
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
