"""How a source renders its charts: GitSource `spec.helm`, or `--helm-values`/`--helm-set`."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
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
    password: str | None = field(default=None, repr=False)
    """Read from a Secret of the target (a Flux HelmRepository's `secretRef`): kept in
    memory only, never in `to_spec`, masked in output (`krm.masking`)."""
    ca_data: str | None = field(default=None, repr=False)
    """A CA bundle (PEM) read from a Secret or ConfigMap of the target."""

    def to_spec(self) -> dict[str, str]:
        out = {"url": self.url}
        if self.username:
            out["username"] = self.username
        if self.password_file is not None:
            out["passwordFile"] = str(self.password_file)
        if self.ca_file is not None:
            out["caFile"] = str(self.ca_file)
        return out


class CrdPolicy(StrEnum):
    """What a release does with its chart's `crds/` (Flux's `install.crds`/`upgrade.crds`)."""

    CREATE = "Create"  # created when absent, never updated
    CREATE_REPLACE = "CreateReplace"  # created and updated
    SKIP = "Skip"  # left out: neither created nor updated (never pruned either)


@dataclass(frozen=True, slots=True)
class ChartRef:
    """The chart of a source whose content is one release of a chart from a chart
    repository: `repository` is an http(s):// chart repository or an oci:// registry
    prefix (the chart is `<repository>/<name>` there), `version` a semver constraint."""

    repository: str
    name: str
    version: str = "*"

    def to_spec(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version}


# The target's version when the source says none (the embedded target's Kubernetes).
EMBEDDED_KUBE_VERSION = "v1.33.0"


@dataclass(frozen=True, slots=True)
class HelmSpec:
    """`release_name` None: each chart's release is named after its directory; `namespace`
    None: the source's default namespace. `value_files` are paths relative to the chart's
    directory (or, with a leading `/`, to the repository's top), inside the repository;
    `values` is the JSON of inline values (merged over the files), `set` Helm `--set`
    expressions (over both), as `helm template` does. `kube_version`/`api_versions` add
    to or replace what the target reports."""

    release_name: str | None = None
    namespace: str | None = None
    value_files: tuple[str, ...] = ()
    values_json: bytes = b"{}"
    set: tuple[str, ...] = ()
    skip_crds: bool = False
    kube_version: str | None = None
    api_versions: tuple[str, ...] = ()
    repositories: tuple[RepositoryAuth, ...] = ()
    install_crds: CrdPolicy = CrdPolicy.CREATE_REPLACE
    upgrade_crds: CrdPolicy = CrdPolicy.CREATE_REPLACE
    create_namespace: bool = False
    """The release namespace is created (and never pruned) when no manifest declares it."""
    template_mode: bool = False
    """Argo CD's semantics: rendered as `helm template` renders (always an install) and
    Helm hooks on every sync (`hooks`)."""
    set_string: tuple[tuple[str, str], ...] = ()
    """(path, value) set as strings after `set` (Argo CD's `forceString` parameters)."""
    file_parameters: tuple[tuple[str, str], ...] = ()
    """(path, file): the file's text set at the path (Helm's `--set-file`); files as
    `value_files` name them."""
    ignore_missing_value_files: bool = False

    @property
    def outside_chart(self) -> bool:
        """Whether a value file or file parameter is named from the repository's top
        (`/path`): the source then lists the repository's whole tree."""
        return any(f.startswith("/") for f in (*self.value_files,
                                                *(f for _, f in self.file_parameters)))  # fmt: skip

    def crd_policy(self, *, is_install: bool) -> CrdPolicy:
        if self.skip_crds:
            return CrdPolicy.SKIP
        return self.install_crds if is_install else self.upgrade_crds

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
            out["values"] = _masked(self.values)
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
        if self.install_crds is not CrdPolicy.CREATE_REPLACE:
            out["installCRDs"] = str(self.install_crds)
        if self.upgrade_crds is not CrdPolicy.CREATE_REPLACE:
            out["upgradeCRDs"] = str(self.upgrade_crds)
        if self.create_namespace:
            out["createNamespace"] = True
        if self.template_mode:
            out["templateMode"] = True
        if self.set_string:
            out["setString"] = [f"{k}={_masked(v)}" for k, v in self.set_string]
        if self.file_parameters:
            out["fileParameters"] = [{"name": k, "path": v} for k, v in self.file_parameters]
        if self.ignore_missing_value_files:
            out["ignoreMissingValueFiles"] = True
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
            if ".." in str(f).split("/"):
                raise BadRequest(
                    f"spec.helm.valueFiles[{i}]: {f!r} must be a path inside the repository, "
                    "relative to the chart's directory (or, with a leading /, to its top)"
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
            install_crds=CrdPolicy(spec.get("installCRDs") or CrdPolicy.CREATE_REPLACE),
            upgrade_crds=CrdPolicy(spec.get("upgradeCRDs") or CrdPolicy.CREATE_REPLACE),
            create_namespace=bool(spec.get("createNamespace", False)),
            template_mode=bool(spec.get("templateMode", False)),
            set_string=tuple(
                (k, v) for k, _, v in (str(e).partition("=") for e in spec.get("setString") or ())
            ),
            file_parameters=tuple(
                (str(p["name"]), str(p["path"])) for p in spec.get("fileParameters") or ()
            ),
            ignore_missing_value_files=bool(spec.get("ignoreMissingValueFiles", False)),
        )

    def with_overrides(self, *, values: Mapping[str, Any], sets: tuple[str, ...]) -> HelmSpec:
        """This spec with values merged over its own and `--set` expressions after its own
        (the command-line flags)."""
        merged = merge_values(self.values, dict(values))
        return dataclasses.replace(
            self,
            values_json=orjson.dumps(merged, option=orjson.OPT_SORT_KEYS),
            set=(*self.set, *sets),
        )


def merge_values(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge of user values (`-f` files, then `--set`): maps merge key by key, any
    other value replaces."""
    out = dict(base)
    for k, v in over.items():
        old = out.get(k)
        out[k] = merge_values(old, v) if isinstance(v, dict) and isinstance(old, dict) else v
    return out


def _split_path(path: str) -> list[str]:
    """`a.b\\.c.d[0]` -> ["a", "b.c", "d[0]"] (Helm's --set path: `\\.` a literal dot)."""
    parts, cur, escaped = [], "", False
    for ch in path:
        if escaped:
            cur += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ".":
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


_INDEX = re.compile(r"^(.*?)\[(\d+)\]$")
MAX_INDEX = 10_000


def set_path(values: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`values` with `value` at the --set path `path` (copied along the path);
    ValueError for a path that is not one."""
    parts = _split_path(path)
    if any(not p for p in parts):
        raise ValueError(f"{path!r} is not a values path")
    out = dict(values)
    node: Any = out
    for n, part in enumerate(parts):
        last = n == len(parts) - 1
        m = _INDEX.match(part)
        key, index = (m.group(1), int(m.group(2))) if m else (part, None)
        if index is None:
            if last:
                node[key] = value
            else:
                child = node.get(key)
                node[key] = dict(child) if isinstance(child, dict) else {}
                node = node[key]
            continue
        if index > MAX_INDEX:
            raise ValueError(f"{path!r}: index {index} is too large")
        old = node.get(key)
        items = list(old) if isinstance(old, list) else []
        items.extend([None] * (index + 1 - len(items)))
        node[key] = items
        if last:
            items[index] = value
        else:
            child = items[index]
            items[index] = dict(child) if isinstance(child, dict) else {}
            node = items[index]
    return out


def _masked(values: Any) -> Any:
    """Values as shown on a GitSource: those read from Secrets (`valuesFrom`) masked."""
    from gitkrm.krm import masking

    if not masking.active():
        return values
    return orjson.loads(masking.mask(orjson.dumps(values).decode()))


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
