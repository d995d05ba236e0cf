"""The test chart `shop` (tests/charts/shop, written for these tests: a subchart behind a
condition, a dependency, hooks, a CRD in crds/, a custom resource, a values schema, and a
template that branches on `.Capabilities`) as files, and edits of it."""

from __future__ import annotations

from pathlib import Path

SHOP = Path(__file__).resolve().parent / "shop"


def shop_files(prefix: str = "shop") -> dict[str, bytes]:
    """Every file of the chart, under `prefix/` (repository paths)."""
    out: dict[str, bytes] = {}
    for p in sorted(SHOP.rglob("*")):
        if p.is_file():
            rel = p.relative_to(SHOP).as_posix()
            out[f"{prefix}/{rel}" if prefix else rel] = p.read_bytes()
    return out


def relative(files: dict[str, bytes], prefix: str = "shop") -> dict[str, bytes]:
    return {k[len(prefix) + 1 :]: v for k, v in files.items() if k.startswith(prefix + "/")}


def bump(files: dict[str, bytes], version: str, prefix: str = "shop") -> dict[str, bytes]:
    """The chart at another version (its Chart.yaml's `version`)."""
    key = f"{prefix}/Chart.yaml"
    text = files[key].decode().replace("version: 1.0.0", f"version: {version}", 1)
    return {**files, key: text.encode()}
