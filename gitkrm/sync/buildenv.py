"""Argo CD's build environment: the `ARGOCD_APP_*` variables an interpreted Application's
Helm parameters and value file paths, jsonnet variables, and kustomize images and labels
(annotations too with `commonAnnotationsEnvsubst`) may name, substituted per revision as
Argo CD's repo server substitutes them (`env.Envsubst`, which is Go's `os.Expand`: `$NAME`
and `${NAME}`, `$$` for a `$`, an unknown name becomes empty). Pure: the renderer calls it
with the revision it renders."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Final

from gitkrm.charts.spec import HelmSpec
from gitkrm.sync.appsource_spec import JsonnetSpec, JsonnetVar
from gitkrm.sync.overlay_spec import Overlay

_SPECIAL: Final = frozenset("*#$@!?-0123456789")
NAMES: Final = (
    "ARGOCD_APP_NAME", "ARGOCD_APP_NAMESPACE", "ARGOCD_APP_PROJECT_NAME",
    "ARGOCD_APP_REVISION", "ARGOCD_APP_REVISION_SHORT", "ARGOCD_APP_REVISION_SHORT_8",
    "ARGOCD_APP_SOURCE_REPO_URL", "ARGOCD_APP_SOURCE_PATH",
    "ARGOCD_APP_SOURCE_TARGET_REVISION",
)  # fmt: skip


def _name(s: str, i: int) -> tuple[str, int]:
    """Go's `getShellName` for the text after a `$` at `i`: the name and its width."""
    if s[i] == "{":
        if len(s) > i + 2 and s[i + 1] in _SPECIAL and s[i + 2] == "}":
            return s[i + 1], 3
        end = s.find("}", i + 1)
        if end == -1:
            return "", 1  # bad syntax: "${" is eaten
        if end == i + 1:
            return "", 2  # "${}" is eaten
        return s[i + 1 : end], end - i + 1
    if s[i] in _SPECIAL:
        return s[i], 1
    j = i
    while j < len(s) and (s[j] == "_" or (s[j].isascii() and s[j].isalnum())):
        j += 1
    return s[i:j], j - i


def expand(text: str, env: Mapping[str, str]) -> str:
    """`text` with `env`'s variables substituted as Go's `os.Expand` with Argo CD's mapping."""
    if "$" not in text:
        return text
    out: list[str] = []
    start = j = 0
    while j < len(text):
        if text[j] == "$" and j + 1 < len(text):
            out.append(text[start:j])
            name, width = _name(text, j + 1)
            if name:
                out.append("$" if name == "$" else env.get(name, ""))
            elif width == 0:
                out.append("$")  # `$` not followed by a name stays
            j += width
            start = j + 1
        j += 1
    out.append(text[start:])
    return "".join(out)


def names_variable(text: str) -> bool:
    """Whether `text` starts with a build environment variable (`$ARGOCD_APP_NAME...`):
    then a value file path is a path to substitute, not a `$ref`."""
    name, _ = _name(text, 1) if len(text) > 1 else ("", 0)
    return name in NAMES


def helm(spec: HelmSpec, env: Mapping[str, str]) -> HelmSpec:
    """`spec` with the values of `parameters` and the paths of value files and file
    parameters substituted (a `$ref/...` path after its ref, as Argo CD does)."""

    def path(p: str) -> str:
        if p.startswith("$") and not names_variable(p):
            ref, slash, rest = p.partition("/")
            return ref + slash + expand(rest, env)
        return expand(p, env)

    def assignment(s: str) -> str:
        name, eq, value = s.partition("=")
        return name + eq + expand(value, env)

    return dataclasses.replace(
        spec,
        value_files=tuple(path(p) for p in spec.value_files),
        set=tuple(assignment(s) for s in spec.set),
        set_string=tuple((n, expand(v, env)) for n, v in spec.set_string),
        file_parameters=tuple((n, path(p)) for n, p in spec.file_parameters),
    )


def jsonnet(spec: JsonnetSpec, env: Mapping[str, str]) -> JsonnetSpec:
    """`spec` with the values of its external variables and top-level arguments substituted."""

    def each(items: tuple[JsonnetVar, ...]) -> tuple[JsonnetVar, ...]:
        return tuple(dataclasses.replace(v, value=expand(v.value, env)) for v in items)

    return dataclasses.replace(spec, ext_vars=each(spec.ext_vars), tlas=each(spec.tlas))


def overlay(spec: Overlay, env: Mapping[str, str], *, annotations: bool) -> Overlay:
    """`spec` with its images and common labels substituted (its common annotations too
    when `annotations`), as Argo CD's kustomize source does."""

    def opt(text: str | None) -> str | None:
        return None if text is None else expand(text, env)

    def pairs(items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return tuple((k, expand(v, env)) for k, v in items)

    return dataclasses.replace(
        spec,
        images=tuple(
            dataclasses.replace(
                im,
                name=expand(im.name, env),
                new_name=opt(im.new_name),
                new_tag=opt(im.new_tag),
                digest=opt(im.digest),
            )
            for im in spec.images
        ),
        labels=pairs(spec.labels),
        annotations=pairs(spec.annotations) if annotations else spec.annotations,
    )
