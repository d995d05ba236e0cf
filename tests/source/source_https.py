"""A TLS server on 127.0.0.1 running `git http-backend` as CGI behind basic auth.

The certificate is self-signed and made per test with `openssl`; git trusts it through the
source's `ca_file`. Requests and their Authorization headers are recorded for assertions.
"""

from __future__ import annotations

import base64
import os
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.support.running import Running
from tests.support.tools import require_tool


def require_tools() -> None:
    """Skip the calling test without openssl or git-http-backend (fail it under CI=true)."""
    require_tool("openssl")
    res = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=False)
    require_tool(
        "git-http-backend",
        candidates=[Path(res.stdout.strip()) / "git-http-backend"],
        search_path=False,
    )


def make_cert(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class GitHttpsServer(Running):
    """`with GitHttpsServer(root, username=..., password=...) as srv:` serves repos under root."""

    def __init__(self, project_root: Path, *, username: str, password: str, certs: Path) -> None:
        self.project_root = project_root
        self.expected = {
            "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode(),
            f"Bearer {password}",
        }
        self.cert, key = make_cert(certs)
        self.auth_headers: list[str] = []
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        if size == 0:
                            self.rfile.readline()
                            return out
                        out += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _serve(self) -> None:
                auth = self.headers.get("Authorization", "")
                server.auth_headers.append(auth)
                server.paths.append(self.path)
                body = self._body() if self.command == "POST" else b""
                if auth not in server.expected:
                    msg = b"authentication required\n"
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                path, _, query = self.path.partition("?")
                env = {
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "GIT_PROJECT_ROOT": str(server.project_root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_CONFIG_GLOBAL": os.devnull,
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_USER": "test",
                    "REMOTE_ADDR": "127.0.0.1",
                }
                if self.headers.get("Git-Protocol"):
                    env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
                if self.headers.get("Content-Encoding"):
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                res = subprocess.run(
                    ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
                )
                head, _, payload = res.stdout.partition(b"\r\n\r\n")
                status = 200
                headers: list[tuple[str, str]] = []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert, key)
        self._httpd.socket = ctx.wrap_socket(self._httpd.socket, server_side=True)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def url(self, repo: str) -> str:
        return f"https://127.0.0.1:{self.port}/{repo}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)
