"""One chart of a revision rendered as one release: values, capabilities, install or
upgrade, hooks; cached by everything a render depends on.

Release semantics are Flux's: `.Release.IsInstall` until a sync of the release succeeded
(`mark_installed`, which the engine calls after applying), `.Release.IsUpgrade` after. No
release Secret is written anywhere: gitkrm's inventory owns the objects (Argo CD's model).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from gitkrm.charts import archive, library
from gitkrm.charts.hooks import translate_hooks
from gitkrm.charts.library import ChartError, RenderOptions
from gitkrm.charts.repository import ChartFetcher, yaml_mapping
from gitkrm.charts.spec import EMBEDDED_KUBE_VERSION, HelmSpec, merge_values

PRUNE_ANNOTATION: Final = "gitkrm.io/prune"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """`.Capabilities` of a render: the target's Kubernetes version and API versions
    (`group/version` and `group/version/Kind`, sorted)."""

    kube_version: str = EMBEDDED_KUBE_VERSION
    api_versions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Release:
    """What the note and the status file say about a release."""

    name: str
    namespace: str
    chart: str
    version: str
    digest: str
    directory: str
    install: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_report(self) -> dict[str, Any]:
        return {
            "release": self.name,
            "namespace": self.namespace,
            "chart": self.chart,
            "version": self.version,
            "digest": self.digest,
            "path": self.directory or ".",
        }


@dataclass(frozen=True, slots=True)
class RenderedRelease:
    """The manifests of one release: (repository path of the template, YAML text)."""

    release: Release
    manifests: tuple[tuple[str, bytes], ...]


def chart_digest(entries: Iterable[tuple[str, str]]) -> str:
    """A chart's identity from its (relative path, blob id) pairs: no file is read."""
    h = hashlib.sha256()
    for path, blob in sorted(entries):
        h.update(f"{path}\0{blob}\n".encode())
    return "sha256:" + h.hexdigest()


class ChartRenderer:
    """Renders a source's charts (see the module docstring); one per source."""

    def __init__(
        self,
        *,
        spec: HelmSpec | None = None,
        default_namespace: str | None = None,
        state_file: Path | None = None,
        persist: bool = True,
        cache_dir: Path | None = None,
    ) -> None:
        """`state_file` records the installed releases across restarts (written unless
        `persist` is False: `gitkrm diff` only reads it)."""
        self.spec = spec or HelmSpec()
        self.default_namespace = default_namespace or "default"
        self._cache: dict[tuple[Any, ...], RenderedRelease] = {}
        self._used: dict[tuple[Any, ...], RenderedRelease] = {}
        self._state_file = state_file
        self.fetcher = ChartFetcher(cache_dir=cache_dir, auth=self.spec.repositories)
        self._persist = persist
        self._installed: set[str] = self._load_installed()

    # -- install or upgrade ------------------------------------------------------------

    def _load_installed(self) -> set[str]:
        if self._state_file is None:
            return set()
        try:
            data = json.loads(self._state_file.read_text())
        except (OSError, ValueError):
            return set()
        return {str(k) for k in data.get("installed", ())}

    def is_installed(self, key: str) -> bool:
        return key in self._installed

    def mark_installed(self, releases: Iterable[Release]) -> None:
        """The releases were applied: their next render is an upgrade."""
        new = {r.key for r in releases} - self._installed
        if not new:
            return
        self._installed |= new
        if self._state_file is not None and self._persist:
            self._state_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._state_file.with_suffix(".tmp")
            tmp.write_text(json.dumps({"installed": sorted(self._installed)}))
            tmp.replace(self._state_file)

    # -- rendering ---------------------------------------------------------------------

    def release_name(self, directory: str) -> str:
        return self.spec.release_name or posixpath.basename(directory) or "release"

    def render(
        self,
        *,
        directory: str,
        digest: str,
        read: Callable[[], Mapping[str, bytes]],
        capabilities: Capabilities,
    ) -> RenderedRelease:
        """The chart in `directory` (its files, relative, from `read`, called on a miss)."""
        spec = self.spec
        name = self.release_name(directory)
        namespace = spec.namespace or self.default_namespace
        install = not self.is_installed(f"{namespace}/{name}")
        kube = spec.kube_version or capabilities.kube_version
        apis = tuple(sorted({*capabilities.api_versions, *spec.api_versions}))
        key = (directory, digest, spec, name, namespace, install, kube, apis)
        hit = self._cache.get(key)
        if hit is None:
            options = RenderOptions(
                name=name,
                namespace=namespace,
                is_install=install,
                kube_version=kube,
                api_versions=apis,
            )
            hit = self._render(directory, digest, read(), options)
            self._cache[key] = hit
        self._used[key] = hit
        return hit

    def rotate(self) -> None:
        """After a render of the whole revision: keep what it used (and the generation
        before, for a `git revert`)."""
        self._cache = {**self._used}
        self._used = {}

    def _render(
        self, directory: str, digest: str, files: Mapping[str, bytes], options: RenderOptions
    ) -> RenderedRelease:
        where = directory or "."
        files = archive.kept(files)
        meta = _chart_yaml(files, where)
        chart_name = str(meta.get("name") or posixpath.basename(directory) or "chart")
        values = self._values(files, where)
        loaded = library.load_archive(archive.pack(chart_name, files), chart=where)
        try:
            templates = library.render(loaded, values, options, chart=where)
            crds = [] if self.spec.skip_crds else library.crds(loaded)
        finally:
            loaded.close()
        base = f"{directory}/" if directory else ""
        manifests: list[tuple[str, bytes]] = []
        for crd in crds:
            path = base + str(crd.get("filename") or crd.get("name")).partition("/")[2]
            manifests.append((path, _keep_crds(crd.get("data", ""), path)))
        for template, text in sorted(templates.items()):
            if template.endswith("NOTES.txt") or not text.strip():
                continue
            path = base + template.partition("/")[2]  # <chart name>/templates/x.yaml
            text = translate_hooks(text, is_install=options.is_install)
            if text.strip():
                manifests.append((path, text.encode()))
        release = Release(
            name=options.name,
            namespace=options.namespace,
            chart=chart_name,
            version=str(meta.get("version") or ""),
            digest=digest,
            directory=directory,
            install=options.is_install,
        )
        return RenderedRelease(release, tuple(manifests))

    def _values(self, files: Mapping[str, bytes], where: str) -> dict[str, Any]:
        """User values: the value files, then the inline values, then `--set`."""
        spec = self.spec
        values: dict[str, Any] = {}
        for f in spec.value_files:
            data = files.get(posixpath.normpath(f))
            if data is None:
                raise ChartError(where, f"value file {f!r} is not in the chart's directory")
            loaded = yaml_mapping(data, f"value file {f!r}", where)
            values = merge_values(values, loaded)
        values = merge_values(values, spec.values)
        for parsed in library.parse_sets(spec.set, chart=where):
            values = merge_values(values, parsed)
        return values


def _chart_yaml(files: Mapping[str, bytes], where: str) -> dict[str, Any]:
    return yaml_mapping(files.get("Chart.yaml", b""), "Chart.yaml", where)


def _keep_crds(text: str, path: str) -> bytes:
    """A CRD of `crds/`: Helm never deletes these, so gitkrm does not prune them either."""
    docs = [d for d in yaml.load_all(text, Loader=_Loader) if isinstance(d, dict)]
    for d in docs:
        md = d.setdefault("metadata", {})
        if isinstance(md, dict):
            md.setdefault("annotations", {})[PRUNE_ANNOTATION] = "disabled"
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False).encode()
