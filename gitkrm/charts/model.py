"""The values of a chart render: the capabilities it sees, the release it is, what it made."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gitkrm.charts.spec import EMBEDDED_KUBE_VERSION


@dataclass(frozen=True, slots=True)
class Capabilities:
    """`.Capabilities` of a render: the target's Kubernetes version and API versions
    (`group/version` and `group/version/Kind`, sorted)."""

    kube_version: str = EMBEDDED_KUBE_VERSION
    api_versions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Release:
    """One chart rendered as a release; `inputs` is the digest of everything the render
    depended on but install/upgrade (chart, values, release, capabilities)."""

    name: str
    namespace: str
    chart: str
    version: str
    digest: str
    directory: str
    install: bool
    inputs: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_report(self) -> dict[str, Any]:
        """What the note and the status file say about it."""
        return {
            "release": self.name,
            "namespace": self.namespace,
            "chart": self.chart,
            "version": self.version,
            "digest": self.digest,
            "path": self.directory or ".",
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "chart": self.chart,
            "version": self.version,
            "digest": self.digest,
            "directory": self.directory,
            "install": self.install,
            "inputs": self.inputs,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Release:
        return cls(
            name=str(data["name"]),
            namespace=str(data["namespace"]),
            chart=str(data["chart"]),
            version=str(data["version"]),
            digest=str(data["digest"]),
            directory=str(data["directory"]),
            install=bool(data["install"]),
            inputs=str(data.get("inputs", "")),
        )


@dataclass(frozen=True, slots=True)
class RenderedRelease:
    """The manifests of one release: (repository path of the template, YAML text), and
    the templates that rendered differently when rendered twice (path, message)."""

    release: Release
    manifests: tuple[tuple[str, bytes], ...]
    warnings: tuple[tuple[str, str], ...] = ()


def chart_digest(entries: Iterable[tuple[str, str]]) -> str:
    """A chart's identity from its (relative path, blob id) pairs: no file is read."""
    h = hashlib.sha256()
    for path, blob in sorted(entries):
        h.update(f"{path}\0{blob}\n".encode())
    return "sha256:" + h.hexdigest()
