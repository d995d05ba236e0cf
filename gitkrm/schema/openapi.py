"""The built-in schemas of the pinned Kubernetes release, as shipped by kubernetes-validate.

Loaded lazily, once per process: the `$defs` mapping of `_definitions.json` (about 1.4 MB,
parsed with orjson in ~10 ms) in its plain and its strict (`additionalProperties: false`)
variants, plus an index from GVK to definition name.
"""

from __future__ import annotations

import importlib.resources
from functools import cache
from typing import Any

import orjson

from gitkrm.krm.refs import GVK

RELEASE = "1.33"
"""The one pinned Kubernetes release whose built-in API gitkrm serves."""

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _schema_file(*, strict: bool) -> bytes:
    folder = f"v{RELEASE}.0-local" + ("-strict" if strict else "")
    root = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema"
    return (root / folder / "_definitions.json").read_bytes()


@cache
def definitions(*, strict: bool = False) -> dict[str, Any]:
    """The `$defs` mapping (definition name -> schema); shared, never mutate it."""
    doc = orjson.loads(_schema_file(strict=strict))
    defs: dict[str, Any] = doc["$defs"]
    return defs


@cache
def gvk_index() -> dict[GVK, str]:
    """GVK -> definition name, from `x-kubernetes-group-version-kind` of top-level kinds.

    The generic meta kinds (DeleteOptions, WatchEvent) are listed under every group; they
    are skipped so that each GVK names the one schema of its kind.
    """
    out: dict[GVK, str] = {}
    for name, schema in definitions().items():
        if ".apimachinery.pkg.apis.meta." in name:
            continue
        for g in schema.get("x-kubernetes-group-version-kind", ()):
            out[GVK(group=g["group"], version=g["version"], kind=g["kind"])] = name
    return out


def definition_name(gvk: GVK) -> str | None:
    """The definition name of a built-in kind, or None when the release has no such kind."""
    return gvk_index().get(gvk)
