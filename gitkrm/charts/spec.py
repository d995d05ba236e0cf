"""How a source renders its charts: GitSource `spec.helm`, or `--helm-values`/`--helm-set`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from gitkrm.errors import BadRequest


@dataclass(frozen=True, slots=True)
class RepositoryAuth:
    """Credentials and CA of the repositories whose URL starts with `url`."""

    url: str
    username: str | None = None
    password_file: Path | None = None
    ca_file: Path | None = None

    def to_spec(self) -> dict[str, str]:
        out = {"url": self.url}
        if self.username:
            out["username"] = self.username
        if self.password_file is not None:
            out["passwordFile"] = str(self.password_file)
        if self.ca_file is not None:
            out["caFile"] = str(self.ca_file)
        return out


# The target's version when the source says none (the embedded target's Kubernetes).
EMBEDDED_KUBE_VERSION = "v1.33.0"


@dataclass(frozen=True, slots=True)
class HelmSpec:
    """`release_name` None: each chart's release is named after its directory; `namespace`
    None: the source's default namespace. `value_files` are paths relative to the chart's
    directory, inside the repository; `values` is the JSON of inline values (merged over
    the files), `set` Helm `--set` expressions (over both), as `helm template` does.
    `kube_version`/`api_versions` add to or replace what the target reports."""

    release_name: str | None = None
    namespace: str | None = None
    value_files: tuple[str, ...] = ()
    values_json: bytes = b"{}"
    set: tuple[str, ...] = ()
    skip_crds: bool = False
    kube_version: str | None = None
    api_versions: tuple[str, ...] = ()
    repositories: tuple[RepositoryAuth, ...] = ()

    @property
    def values(self) -> dict[str, Any]:
        data: dict[str, Any] = orjson.loads(self.values_json)
        return data

    def to_spec(self) -> dict[str, Any]:
        """The `spec.helm` of a GitSource (only what is set)."""
        out: dict[str, Any] = {}
        if self.release_name:
            out["releaseName"] = self.release_name
        if self.namespace:
            out["namespace"] = self.namespace
        if self.value_files:
            out["valueFiles"] = list(self.value_files)
        if self.values:
            out["values"] = self.values
        if self.set:
            out["set"] = list(self.set)
        if self.skip_crds:
            out["skipCRDs"] = True
        if self.kube_version:
            out["kubeVersion"] = self.kube_version
        if self.api_versions:
            out["apiVersions"] = list(self.api_versions)
        if self.repositories:
            out["repositories"] = [r.to_spec() for r in self.repositories]
        return out

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None, *, base: Path | None = None) -> HelmSpec:
        """Read `spec.helm` (already checked against the CRD's schema); files of
        `repositories` are relative to `base` (the config file's directory)."""
        if not spec:
            return cls()
        values = spec.get("values") or {}
        if not isinstance(values, dict):
            raise BadRequest("spec.helm.values must be a mapping")
        for i, f in enumerate(spec.get("valueFiles") or ()):
            if str(f).startswith("/") or ".." in str(f).split("/"):
                raise BadRequest(
                    f"spec.helm.valueFiles[{i}]: {f!r} must be a path inside the repository, "
                    "relative to the chart's directory"
                )
        for i, e in enumerate(spec.get("set") or ()):
            if "=" not in str(e):
                raise BadRequest(f"spec.helm.set[{i}]: {e!r} is not KEY=VALUE")
        return cls(
            release_name=spec.get("releaseName") or None,
            namespace=spec.get("namespace") or None,
            value_files=tuple(str(f) for f in spec.get("valueFiles") or ()),
            values_json=orjson.dumps(values, option=orjson.OPT_SORT_KEYS),
            set=tuple(str(e) for e in spec.get("set") or ()),
            skip_crds=bool(spec.get("skipCRDs", False)),
            kube_version=spec.get("kubeVersion") or None,
            api_versions=tuple(str(v) for v in spec.get("apiVersions") or ()),
            repositories=tuple(_repository(r, base) for r in spec.get("repositories") or ()),
        )

    def with_overrides(self, *, values: Mapping[str, Any], sets: tuple[str, ...]) -> HelmSpec:
        """This spec with values merged over its own and `--set` expressions after its own
        (the command-line flags)."""
        merged = merge_values(self.values, dict(values))
        return HelmSpec(
            release_name=self.release_name,
            namespace=self.namespace,
            value_files=self.value_files,
            values_json=orjson.dumps(merged, option=orjson.OPT_SORT_KEYS),
            set=(*self.set, *sets),
            skip_crds=self.skip_crds,
            kube_version=self.kube_version,
            api_versions=self.api_versions,
            repositories=self.repositories,
        )


def merge_values(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge of user values (`-f` files, then `--set`): maps merge key by key, any
    other value replaces."""
    out = dict(base)
    for k, v in over.items():
        old = out.get(k)
        out[k] = merge_values(old, v) if isinstance(v, dict) and isinstance(old, dict) else v
    return out


def _repository(spec: Mapping[str, Any], base: Path | None) -> RepositoryAuth:
    def path(key: str) -> Path | None:
        value = spec.get(key)
        if not value:
            return None
        p = Path(str(value))
        return p if p.is_absolute() or base is None else base / p

    url = str(spec.get("url") or "")
    if not url.startswith(("http://", "https://", "oci://")):
        raise BadRequest(f"spec.helm.repositories: {url!r} is not an http(s):// or oci:// URL")
    return RepositoryAuth(
        url=url,
        username=spec.get("username") or None,
        password_file=path("passwordFile"),
        ca_file=path("caFile"),
    )
