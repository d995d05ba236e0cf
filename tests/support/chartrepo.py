"""A real HTTP chart repository on loopback: a directory of chart archives packaged by Helm
(helm-python-sdk) with the `index.yaml` Helm generates, served by a threaded HTTP server on
127.0.0.1 at a free port, optionally behind basic auth; it counts the requests per path."""

from __future__ import annotations

import base64
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import helm_python
import pytest


class ChartRepo:
    def __init__(self, root: Path, *, credentials: tuple[str, str] | None = None) -> None:
        self.root = root
        self.credentials = credentials
        self.requests: Counter[str] = Counter()
        repo = self

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(root), **kwargs)

            def do_GET(self) -> None:
                repo.requests[self.path] += 1
                if repo.credentials is not None:
                    want = base64.b64encode(":".join(repo.credentials).encode()).decode()
                    if self.headers.get("Authorization") != f"Basic {want}":
                        self.send_response(401)
                        self.send_header("WWW-Authenticate", 'Basic realm="charts"')
                        self.end_headers()
                        return
                super().do_GET()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def publish(self, chart: Path, version: str) -> str:
        """Package `chart` at `version` into the repository and index it again."""
        archive = helm_python.package(chart, destination=self.root, version=version)
        helm_python.repo_index_generate(self.root, base_url=self.url)
        return archive

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)


@pytest.fixture
def chart_repo(tmp_path: Path) -> Iterator[ChartRepo]:
    root = tmp_path / "chart-repo"
    root.mkdir()
    repo = ChartRepo(root)
    try:
        yield repo
    finally:
        repo.close()
