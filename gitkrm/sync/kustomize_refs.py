"""Every path a kustomization names, through every field kustomize reads a path from.

gitkrm builds with kustomize's load restrictions off, as Flux does, so a kustomization may
name files anywhere in the repository; it is gitkrm that keeps each build inside the
repository, by checking every path before kustomize runs. The fields (kustomize v5):
`resources`, `bases`, `components` (files or kustomization directories); `generators`,
`transformers`, `validators` (plugin configuration files, kustomization directories or
inline YAML; the paths inside a configuration file count too); `patches[].path`,
`patchesStrategicMerge[]` (a path or an inline patch), `patchesJson6902[].path`;
`configMapGenerator[]` and `secretGenerator[]` `files` (`key=path` or a path), `envs`,
`env`; `crds`, `configurations`, `replacements[].path`, `openapi.path`. `helmCharts`
need `--enable-helm`, which gitkrm never passes (nor does Flux): they are a problem of the
kustomization, said in gitkrm's words rather than kustomize's "must specify --enable-helm".
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import yaml


class RefKind(StrEnum):
    ANY = "any"  # a file or a kustomization directory
    FILE = "file"  # a file only
    CONFIG = "config"  # a plugin configuration file (whose own paths count) or a directory


@dataclass(frozen=True, slots=True)
class Ref:
    """One path as written (`value`) in the field `where` (`patches[0].path`)."""

    where: str
    value: str
    kind: RefKind


_LISTS: Final = (
    ("resources", RefKind.ANY),
    ("bases", RefKind.ANY),
    ("components", RefKind.ANY),
    ("crds", RefKind.FILE),
    ("configurations", RefKind.FILE),
)
_PLUGINS: Final = ("generators", "transformers", "validators")  # may hold inline YAML
_PATH_ITEMS: Final = ("patches", "patchesJson6902", "replacements")  # items with `path`
_GENERATORS: Final = ("configMapGenerator", "secretGenerator")
_HELM: Final = ("helmCharts", "helmChartInflationGenerator")  # kustomize's Helm inflation
_NO_HELM: Final = (
    "kustomize's Helm chart inflation is off in gitkrm, as in Flux's kustomize-controller "
    "and Argo CD without kustomize.buildOptions --enable-helm (it is never passed): render "
    "the chart from its own directory (a Chart.yaml outside kustomization directories), "
    "with a Flux HelmRelease (--interpret flux) or an Argo CD Application's Helm source "
    "(--interpret argocd)"
)


def load(text: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """A kustomization (or plugin configuration) document, or why it isn't one."""
    try:
        doc = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as e:
        return None, f"invalid kustomization: {e}"
    if doc is None:
        return {}, None
    if not isinstance(doc, dict):
        return None, "a kustomization must be a mapping"
    return doc, None


def is_component(doc: Mapping[str, Any]) -> bool:
    return doc.get("kind") == "Component"


def _inline(value: str) -> bool:
    return "\n" in value or value.lstrip().startswith("{")


def kustomization_refs(doc: Mapping[str, Any]) -> tuple[list[Ref], list[str]]:
    """The paths a kustomization names, and the problems of fields of the wrong shape."""
    refs: list[Ref] = []
    problems: list[str] = []

    def listed(key: str) -> list[Any]:
        value = doc.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            problems.append(f"kustomization field {key!r} must be a list")
            return []
        return value

    problems.extend(f"{key}: {_NO_HELM}" for key in _HELM if doc.get(key))
    for key, kind in _LISTS:
        refs.extend(Ref(key, v, kind) for v in listed(key) if isinstance(v, str))
    for key in _PLUGINS:
        refs.extend(
            Ref(key, v, RefKind.CONFIG)
            for v in listed(key)
            if isinstance(v, str) and not _inline(v)
        )
    refs.extend(
        Ref("patchesStrategicMerge", v, RefKind.FILE)
        for v in listed("patchesStrategicMerge")
        if isinstance(v, str) and not _inline(v)
    )
    for key in _PATH_ITEMS:
        for i, item in enumerate(listed(key)):
            if isinstance(item, dict) and isinstance(item.get("path"), str):
                refs.append(Ref(f"{key}[{i}].path", item["path"], RefKind.FILE))
    for key in _GENERATORS:
        for i, item in enumerate(listed(key)):
            if isinstance(item, dict):
                refs.extend(_generator_files(item, f"{key}[{i}]."))
    openapi = doc.get("openapi")
    if isinstance(openapi, dict) and isinstance(openapi.get("path"), str):
        refs.append(Ref("openapi.path", openapi["path"], RefKind.FILE))
    return refs, problems


def _generator_files(item: Mapping[str, Any], where: str) -> Iterator[Ref]:
    """`files` (`key=path` or a path), `envs` and `env` of a ConfigMap or Secret generator."""
    files = item.get("files")
    for f in files if isinstance(files, list) else ():
        if isinstance(f, str):
            yield Ref(where + "files", f.partition("=")[2] if "=" in f else f, RefKind.FILE)
    envs = item.get("envs")
    for e in envs if isinstance(envs, list) else ():
        if isinstance(e, str):
            yield Ref(where + "envs", e, RefKind.FILE)
    if isinstance(item.get("env"), str):
        yield Ref(where + "env", item["env"], RefKind.FILE)


def plugin_refs(text: bytes) -> list[Ref]:
    """Paths inside a plugin configuration file (the built-in plugins' fields: `path`,
    `paths`, `replacements[].path`, and a generator's `files`, `envs`, `env`)."""
    try:
        docs = list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    except yaml.YAMLError:
        return []  # kustomize reports it, naming the file
    refs: list[Ref] = []
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if isinstance(doc.get("path"), str):
            refs.append(Ref("path", doc["path"], RefKind.FILE))
        paths = doc.get("paths")
        for p in paths if isinstance(paths, list) else ():
            if isinstance(p, str) and not _inline(p):
                refs.append(Ref("paths", p, RefKind.FILE))
        replacements = doc.get("replacements")
        for i, r in enumerate(replacements if isinstance(replacements, list) else ()):
            if isinstance(r, dict) and isinstance(r.get("path"), str):
                refs.append(Ref(f"replacements[{i}].path", r["path"], RefKind.FILE))
        refs.extend(_generator_files(doc, ""))
    return refs


def is_remote(ref: str) -> bool:
    return "://" in ref or ref.startswith(("git@", "git::", "github.com/", "gitlab.com/"))


def resolve(ref: Ref, directory: str) -> tuple[str | None, str | None]:
    """The repository path `ref` names from the kustomization in `directory` ("" for the
    repository's top), or why it can't be read."""
    value = ref.value
    if is_remote(value):
        return None, (
            f"{ref.where} entry {value!r} is remote: gitkrm renders only what the repository "
            "holds (vendor the base into the repository)"
        )
    if value.startswith("/"):
        return None, f"{ref.where} entry {value!r} is an absolute path"
    joined = posixpath.normpath(posixpath.join(directory or ".", value))
    if joined == ".." or joined.startswith(("../", "/")):
        return None, f"{ref.where} entry {value!r} leaves the repository"
    return ("" if joined == "." else joined), None
