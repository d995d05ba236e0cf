"""One chart of a revision rendered as one release: values, capabilities, install or
upgrade, hooks; cached by everything a render depends on (`rendercache`).

Release semantics are Flux's: `.Release.IsInstall` until a sync of the release succeeded
(`mark_installed`, which the engine calls after applying), `.Release.IsUpgrade` after; a
release whose inputs did not change since it was applied keeps the render that was applied.
No release Secret is written anywhere: gitkrm's inventory owns the objects (Argo CD's model).

A chart whose templates call a function that differs from call to call (`randAlphaNum`,
`genCA`, `now`, ...), or that has packed subcharts, is rendered twice on a miss: the
templates that came out differently are reported as warnings, and the first render is the
one kept.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from gitkrm.charts import archive, library
from gitkrm.charts.hooks import translate_hooks
from gitkrm.charts.library import ChartError, RenderOptions
from gitkrm.charts.model import Capabilities, Release, RenderedRelease
from gitkrm.charts.rendercache import RenderStore
from gitkrm.charts.repository import ChartFetcher, yaml_mapping
from gitkrm.charts.spec import CrdPolicy, HelmSpec, merge_values, set_path

RELEASE_NAME_MAX: Final = 53  # Helm's (chartutil.ValidateReleaseName)

PRUNE_ANNOTATION: Final = "gitkrm.io/prune"
# Flux's "create when absent, never update" (honoured by the plan: `sync.peers`).
CREATE_ONLY: Final = ("kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent")
_VOLATILE: Final = re.compile(
    rb"\b(rand(Alpha|Numeric|AlphaNum|Ascii|Int|Bytes)?|genCA|genCAWithKey|genPrivateKey|"
    rb"genSelfSignedCert|genSelfSignedCertWithKey|genSignedCert|genSignedCertWithKey|uuidv4|"
    rb"now|htpasswd|bcrypt|shuffle|encryptAES)\b"
)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


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
        """`state_file` keeps the renders and the applied releases across restarts
        (written unless `persist` is False: `gitkrm diff` only reads it); `cache_dir`
        keeps fetched dependencies."""
        self.spec = spec or HelmSpec()
        self.default_namespace = default_namespace or "default"
        self.fetcher = ChartFetcher(cache_dir=cache_dir, auth=self.spec.repositories)
        self.store = RenderStore(state_file, persist=persist)
        self._spec_json = ""
        self.respec(self.spec)

    def respec(self, spec: HelmSpec) -> None:
        """Render with `spec` from now on (an Argo CD Application's, substituted for the
        revision: `gitkrm.sync.buildenv`); renders stay cached by their inputs."""
        self.spec = spec
        # values_json too: `to_spec` masks values read from Secrets, the key must not.
        self._spec_json = json.dumps([spec.to_spec(), spec.values_json.decode()], sort_keys=True)

    def is_installed(self, key: str) -> bool:
        return key in self.store.applied

    def mark_installed(self, releases: Iterable[Release]) -> None:
        """The releases were applied: their next render with other inputs is an upgrade."""
        self.store.mark_applied(releases)

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
        name = self.release_name(directory)
        if len(name) > RELEASE_NAME_MAX:
            # Helm's own limit; an Argo CD Application's name (up to 253 characters) is
            # its release's unless it names one, and Argo CD's render fails the same way
            raise ChartError(
                directory or ".",
                f"release name {name!r} is longer than {RELEASE_NAME_MAX} characters, "
                "Helm's limit (an Argo CD Application's name is its release name unless "
                "spec.source.helm.releaseName names one)",
            )
        key, options = self._key(directory, digest, capabilities)
        hit = self.store.get(key)
        if hit is None:
            inputs = key.partition(":")[0]
            hit = self._render(directory, digest, inputs, read(), options)
            self.store.put(key, hit)
        return hit

    def cached(self, *, directory: str, digest: str, capabilities: Capabilities) -> bool:
        """Whether `render` would find the render without reading the chart."""
        return self.store.get(self._key(directory, digest, capabilities)[0]) is not None

    def _key(
        self, directory: str, digest: str, capabilities: Capabilities
    ) -> tuple[str, RenderOptions]:
        """The render's cache key (its inputs' digest and install/upgrade) and options."""
        spec = self.spec
        name = self.release_name(directory)
        namespace = spec.namespace or self.default_namespace
        kube = spec.kube_version or capabilities.kube_version
        apis = tuple(sorted({*capabilities.api_versions, *spec.api_versions}))
        inputs = hashlib.sha256(
            json.dumps([directory, digest, self._spec_json, name, namespace, kube, apis]).encode()
        ).hexdigest()
        applied = self.store.applied.get(f"{namespace}/{name}")
        if spec.template_mode:
            install = True  # `helm template`, as Argo CD renders: never an upgrade
        elif applied is not None and applied[0] == inputs:
            install = applied[1]  # nothing changed since it was applied: the same render
        else:
            install = applied is None
        options = RenderOptions(
            name=name,
            namespace=namespace,
            is_install=install,
            kube_version=kube,
            api_versions=apis,
        )
        return f"{inputs}:{'install' if install else 'upgrade'}", options

    def rotate(self) -> None:
        """After a render of the whole revision: keep what it used (and the generation
        before, for a `git revert`), on disk too."""
        self.store.rotate()

    def _render(
        self,
        directory: str,
        digest: str,
        inputs: str,
        files: Mapping[str, bytes],
        options: RenderOptions,
    ) -> RenderedRelease:
        where = directory or "."
        files = archive.kept(files)
        # `$ref/...`: value files of another source (an Argo CD multi-source
        # Application), `/...`: of the repository outside the chart; read for values,
        # not packed into the chart.
        chart_files = {p: b for p, b in files.items() if not p.startswith(("$", "/"))}
        meta = yaml_mapping(files.get("Chart.yaml", b""), "Chart.yaml", where)
        chart_name = str(meta.get("name") or posixpath.basename(directory) or "chart")
        values = self._values(files, where)
        loaded = library.load_archive(archive.pack(chart_name, chart_files), chart=where)
        try:
            templates = library.render(loaded, values, options, chart=where)
            again = library.render(loaded, values, options, chart=where) if _volatile(files) else {}
            policy = self.spec.crd_policy(is_install=options.is_install)
            crds = [] if policy is CrdPolicy.SKIP else library.crds(loaded)
        finally:
            loaded.close()
        base = f"{directory}/" if directory else ""
        manifests: list[tuple[str, bytes]] = []
        warnings: list[tuple[str, str]] = []
        for crd in crds:
            path = base + str(crd.get("filename") or crd.get("name")).partition("/")[2]
            data = _keep_crds(crd.get("data", ""), create_only=policy is CrdPolicy.CREATE)
            manifests.append((path, data))
        if self.spec.create_namespace:
            manifests.append((base + "(createNamespace).yaml", _namespace(options.namespace)))
        for template, text in sorted(templates.items()):
            if template.endswith("NOTES.txt") or not text.strip():
                continue
            path = base + template.partition("/")[2]  # <chart name>/templates/x.yaml
            if again and again.get(template) != text:
                warnings.append(
                    (
                        path,
                        "renders differently each time (a random, key or time function): "
                        "the first rendering is kept until the chart, its values or the "
                        "target change",
                    )
                )
            text = translate_hooks(
                text, is_install=options.is_install, every_sync=self.spec.template_mode
            )
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
            inputs=inputs,
        )
        return RenderedRelease(release, tuple(manifests), tuple(warnings))

    def _values(self, files: Mapping[str, bytes], where: str) -> dict[str, Any]:
        """User values: the value files, then the inline values, then `--set`."""
        spec = self.spec
        values: dict[str, Any] = {}
        for f in spec.value_files:
            data = files.get(posixpath.normpath(f))
            if data is None:
                if spec.ignore_missing_value_files:
                    continue
                whose = "the repository" if f.startswith("/") else "the chart's directory"
                raise ChartError(where, f"value file {f!r} is not in {whose}")
            loaded = yaml_mapping(data, f"value file {f!r}", where)
            values = merge_values(values, loaded)
        values = merge_values(values, spec.values)
        for parsed in library.parse_sets(spec.set, chart=where):
            values = merge_values(values, parsed)
        try:
            for key, value in spec.set_string:
                values = set_path(values, key, value)
            for key, f in spec.file_parameters:
                data = files.get(posixpath.normpath(f))
                if data is None:
                    raise ChartError(where, f"file parameter {key}: {f!r} is not a file")
                values = set_path(values, key, data.decode("utf-8", "replace"))
        except ValueError as e:
            raise ChartError(where, str(e)) from None
        return values


def _volatile(files: Mapping[str, bytes]) -> bool:
    """Whether a render may differ from the next: a template calls a function that does,
    or a packed subchart (not scanned) might."""
    for path, data in files.items():
        if path.endswith(".tgz") or (
            (path.startswith("templates/") or "/templates/" in path) and _VOLATILE.search(data)
        ):
            return True
    return False


def _keep_crds(text: str, *, create_only: bool = False) -> bytes:
    """A CRD of `crds/`: Helm never deletes these, so gitkrm does not prune them either;
    `create_only` (the `Create` policy): created when absent, never updated."""
    docs = [d for d in yaml.load_all(text, Loader=_Loader) if isinstance(d, dict)]
    for d in docs:
        md = d.setdefault("metadata", {})
        if isinstance(md, dict):
            annotations = md.setdefault("annotations", {})
            annotations[PRUNE_ANNOTATION] = "disabled"
            if create_only:
                annotations[CREATE_ONLY[0]] = CREATE_ONLY[1]
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False).encode()


def _namespace(name: str) -> bytes:
    """`createNamespace`: the release namespace, never pruned (Helm and Flux leave it)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "annotations": {PRUNE_ANNOTATION: "disabled"}},
    }
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False).encode()
