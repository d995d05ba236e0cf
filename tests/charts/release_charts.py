"""The charts of the release tests (tests/charts/releases, written for them): `webapp`
(values, a CRD in crds/, a Secret from values, a pre-install/pre-upgrade hook) and `cache`."""

from __future__ import annotations

from pathlib import Path

import helm_python

RELEASES = Path(__file__).resolve().parent / "releases"
WEBAPP = RELEASES / "webapp"
CACHE = RELEASES / "cache"


def push(chart: Path, version: str, url: str, tmp: Path) -> None:
    """Package `chart` at `version` and push it to the OCI repository `url` (loopback)."""
    tmp.mkdir(parents=True, exist_ok=True)
    archive = helm_python.package(chart, destination=tmp, version=version)
    helm_python.push(archive, url, plain_http=True)
