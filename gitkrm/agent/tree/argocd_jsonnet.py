"""An Application's `spec.source.directory.jsonnet` read into a `JsonnetSpec` (external
variables, top-level arguments and library paths; gitkrm.sync.jsonnet evaluates)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitkrm.sync.appsource_spec import JsonnetSpec, JsonnetVar

from .fields import Fail


def jsonnet_of(value: Any, fail: Fail, *, at: str) -> JsonnetSpec:
    if not value:
        return JsonnetSpec()
    if not isinstance(value, Mapping):
        raise fail(at, "must be an object (extVars, tlas, libs)")
    for key in value:
        if key not in ("extVars", "tlas", "libs"):
            raise fail(f"{at}.{key}", "not a field of directory.jsonnet (extVars, tlas, libs)")
    libs = value.get("libs") or []
    if not isinstance(libs, list) or not all(isinstance(x, str) and x for x in libs):
        raise fail(f"{at}.libs", "must be a list of repository paths")
    for lib in libs:
        if lib.startswith("/") or ".." in lib.split("/"):
            raise fail(f"{at}.libs", f"{lib!r}: a path inside the repository")
    return JsonnetSpec(
        ext_vars=_vars(value.get("extVars"), fail, at=f"{at}.extVars"),
        tlas=_vars(value.get("tlas"), fail, at=f"{at}.tlas"),
        libs=tuple(lib.strip("/") for lib in libs),
    )


def _vars(items: Any, fail: Fail, *, at: str) -> tuple[JsonnetVar, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise fail(at, "must be a list of {name, value, code}")
    out: list[JsonnetVar] = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping) or not item.get("name"):
            raise fail(f"{at}[{i}].name", "required")
        out.append(
            JsonnetVar(
                name=str(item["name"]), value=str(item.get("value", "")),
                code=bool(item.get("code")),
            )
        )  # fmt: skip
    return tuple(out)
