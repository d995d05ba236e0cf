"""Pushing an artifact as `flux push artifact oci://host/repo:tag --path=dir` does, with raw
HTTP requests following the OCI distribution spec (monolithic blob uploads, then the
manifest), so the client under test reads what Flux writes: an OCI image manifest whose
config is `application/vnd.cncf.flux.config.v1+json` (`{}`) and whose one layer is the
directory as a tar+gzip of media type `application/vnd.cncf.flux.content.v1.tar+gzip`,
annotated with the source and revision.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import tarfile
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from gitkrm.source.oci import FLUX_CONFIG, FLUX_CONTENT, OCI_MANIFEST


def tarball(
    files: Mapping[str, bytes | str], *, edit: Callable[[tarfile.TarFile], None] | None = None
) -> bytes:
    """A tar+gzip of `files` (path -> content); `edit` may add raw members."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for path, content in sorted(files.items()):
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        if edit is not None:
            edit(tar)
    return gzip.compress(raw.getvalue(), mtime=0)


def tree(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class Pusher:
    """Pushes to `host` (plain HTTP), with Basic credentials or a Bearer token when given."""

    def __init__(
        self, host: str, *, username: str = "", password: str = "", bearer: str = ""
    ) -> None:
        self.host = host
        if bearer:
            self._auth = {"Authorization": f"Bearer {bearer}"}
            return
        self._auth = (
            {
                "Authorization": "Basic "
                + base64.b64encode(f"{username}:{password}".encode()).decode()
            }
            if username
            else {}
        )

    def _call(
        self, method: str, url: str, body: bytes = b"", **headers: str
    ) -> tuple[int, Mapping[str, str]]:
        req = urllib.request.Request(
            url, data=body or None, method=method, headers={**self._auth, **headers}
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers)

    def blob(self, name: str, data: bytes) -> str:
        digest = digest_of(data)
        _, headers = self._call("POST", f"http://{self.host}/v2/{name}/blobs/uploads/")
        location = headers["Location"]
        if location.startswith("/"):
            location = f"http://{self.host}{location}"
        sep = "&" if "?" in location else "?"
        self._call(
            "PUT",
            f"{location}{sep}digest={digest}",
            data,
            **{"Content-Type": "application/octet-stream"},
        )
        return digest

    def manifest(self, name: str, reference: str, manifest: Mapping[str, object]) -> str:
        body = json.dumps(manifest).encode()
        self._call(
            "PUT",
            f"http://{self.host}/v2/{name}/manifests/{reference}",
            body,
            **{"Content-Type": OCI_MANIFEST},
        )
        return digest_of(body)

    def artifact(
        self,
        name: str,
        tag: str,
        layer: bytes,
        *,
        media_type: str = FLUX_CONTENT,
        revision: str = "main@sha1:0000000000000000000000000000000000000000",
    ) -> str:
        """Push `layer` (a tarball) as Flux does; the manifest's digest."""
        config = b"{}"
        manifest = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": FLUX_CONFIG,
                "digest": self.blob(name, config),
                "size": len(config),
            },
            "layers": [
                {"mediaType": media_type, "digest": self.blob(name, layer), "size": len(layer)}
            ],
            "annotations": {
                "org.opencontainers.image.created": "2026-01-01T00:00:00Z",
                "org.opencontainers.image.source": "https://github.com/example/fleet",
                "org.opencontainers.image.revision": revision,
            },
        }
        return self.manifest(name, tag, manifest)

    def directory(self, name: str, tag: str, directory: Path) -> str:
        """`flux push artifact oci://<host>/<name>:<tag> --path=<directory>`."""
        return self.artifact(name, tag, tarball(tree(directory)))
