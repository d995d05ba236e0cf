"""Argo CD's ApplicationSet generators and template, as the ApplicationSet controller runs
them: the Application objects an ApplicationSet makes of one revision of a repository.

Generators: `list` (`elements` and `elementsYaml`; a `values` map becomes
`values.<key>`), `git` `directories` (Go's `path.Match` globs over the repository's
directories, hidden ones left out; `exclude: true` wins) and `files` (`**` globs; each
YAML/JSON file, an object or a list of objects, flattened to dotted keys), `pathParamPrefix`
too, `clusters` (Argo CD's cluster Secrets and, when no Secret names it, the local
`in-cluster`, which only an empty selector matches),
`matrix` (two generators, every pair, their parameters merged) and `merge` (`mergeKeys`:
the first generator's sets, each overridden by the later generators' set of equal keys),
`pullRequest` and `scmProvider` (a Git host's pull requests or repositories, which a
`HostLookup` answers: `argocd_scm_hosts`).
Each may have `values` (rendered with its parameters) and a `selector` (`matchLabels`,
`matchExpressions`) over its parameters. The template is rendered per parameter set with
Argo CD's default fasttemplate (`{{ key }}` in every string; an unknown key is left as
written), or with `goTemplate: true` as Go templates by Helm's engine
(`argocd_appset_go`). Pure but for that engine: `Snapshot` reads memory or one
`git cat-file`.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import yaml

from gitkrm.errors import BadRequest
from gitkrm.krm.labels import label_selector_from_dict
from gitkrm.source import Snapshot

from .argocd_appset_go import (
    GoTemplate,
    TemplateError,
    go_template,
    render_go,
    strings_of,
    with_strings,
)
from .argocd_appset_patch import patch_texts, patched
from .argocd_appset_rolling import apply_steps, steps_of
from .argocd_spec import API_VERSION, FINALIZER, IN_CLUSTER_NAME, IN_CLUSTER_SERVER

Params = dict[str, Any]
_TAG: Final = re.compile(r"\{\{(.*?)\}\}", re.S)
_NOT_DNS: Final = re.compile(r"[^-a-z0-9.]")
HOSTED: Final = ("pullRequest", "scmProvider")
GENERATORS: Final = ("list", "git", "clusters", "matrix", "merge", *HOSTED)
SUPPORTED: Final = (
    "list, git (directories, files), clusters, matrix, merge, pullRequest and scmProvider"
)
_WITH_VALUES: Final = ("git", "clusters", *HOSTED)


class HostLookup(Protocol):
    """The parameter sets of a `pullRequest` or `scmProvider` generator (`kind`), from
    the host's answers to `spec`."""

    def params(self, kind: str, spec: Mapping[str, Any], at: str, *, go: bool) -> list[Params]:
        """The sets; raises to have the answer fetched when it is not known yet."""
        ...


@dataclass(frozen=True, slots=True)
class Cluster:
    """A cluster the `clusters` generator yields: a cluster Secret's, or the local one."""

    name: str
    server: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    secret: bool = False
    """From a cluster Secret (a selector matches its labels); the local cluster without a
    Secret matches no selector but an empty one."""


def sanitize(name: str) -> str:
    """Argo CD's `SanitizeName`: lower case, `[^-a-z0-9.]` as `-`, 253 at most."""
    return _NOT_DNS.sub("-", name.lower())[:253].strip("-.")


def _flatten(value: Any, prefix: str, out: Params) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _flatten(v, f"{prefix}.{i}" if prefix else str(i), out)
    elif isinstance(value, bool):
        out[prefix] = "true" if value else "false"
    elif value is None:
        out[prefix] = "<nil>"
    else:
        out[prefix] = str(value)


def _path_params(directory: str, *, go: bool, file: str | None = None, prefix: str = "") -> Params:
    """The `path` parameters (under `<prefix>.` with `pathParamPrefix`)."""
    base = posixpath.basename(directory)
    if go:
        p: Params = {"path": directory, "basename": base, "basenameNormalized": sanitize(base)}
        p["segments"] = directory.split("/")
        if file is not None:
            p["filename"], p["filenameNormalized"] = file, sanitize(file)
        return {prefix: {"path": p}} if prefix else {"path": p}
    key = f"{prefix}.path" if prefix else "path"
    out: Params = {
        key: directory,
        f"{key}.basename": base,
        f"{key}.basenameNormalized": sanitize(base),
    }
    if file is not None:
        out[f"{key}.filename"], out[f"{key}.filenameNormalized"] = file, sanitize(file)
    for i, seg in enumerate(directory.split("/")):
        if seg:
            out[f"{key}[{i}]"] = seg
    return out


def _glob(pattern: str, *, double_star: bool) -> re.Pattern[str]:
    """Go's `path.Match` (`*` stays in a segment); with `double_star`, `**` crosses them."""
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if double_star and pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):  # `a/**/b`: any directories between, or none
                out, i = out + "(?:.*/)?", i + 1
            else:
                out += ".*"
            continue
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                raise BadRequest(f"{pattern!r}: unterminated [")
            body = pattern[i + 1 : end]
            negated = body.startswith("^")
            body = body[1:] if negated else body
            out += "[" + ("^" if negated else "") + body.replace("\\", "\\\\") + "]"
            i = end
        else:
            out += re.escape(c)
        i += 1
    return re.compile(f"^{out}$")


def _directories(files: Iterable[str]) -> list[str]:
    dirs: set[str] = set()
    for path in files:
        parts = path.split("/")[:-1]
        for n in range(1, len(parts) + 1):
            if parts[n - 1].startswith("."):
                break
            dirs.add("/".join(parts[:n]))
    return sorted(dirs)


class Generation:
    """The parameter sets of an ApplicationSet's generators over one snapshot."""

    def __init__(
        self,
        *,
        snapshot: Snapshot | None,
        go: GoTemplate | None,
        fail: Callable[[str, str], Exception],
        clusters: Sequence[Cluster] = (),
        hosts: HostLookup | None = None,
    ):
        self.snapshot = snapshot
        self.clusters = clusters
        self.hosts = hosts
        self.go = go
        self.fail = fail

    def run(self, generator: Mapping[str, Any], at: str) -> list[Params]:
        if not isinstance(generator, Mapping):
            raise self.fail(at, "must be an object")
        kinds = [k for k in generator if k not in ("selector", "values")]
        if len(kinds) != 1:
            raise self.fail(at, f"exactly one generator, got {kinds or 'none'}")
        kind = kinds[0]
        if kind not in GENERATORS:
            raise self.fail(f"{at}.{kind}", f"not supported: gitkrm generates {SUPPORTED}")
        spec = generator[kind] or {}
        if not isinstance(spec, Mapping):
            raise self.fail(f"{at}.{kind}", "must be an object")
        made: list[Params]
        if kind in HOSTED:
            if self.hosts is None:
                raise self.fail(f"{at}.{kind}", "no Git host is asked here")
            made = self.hosts.params(kind, spec, f"{at}.{kind}", go=self.go is not None)
        else:
            made = getattr(self, f"_{kind}")(spec, f"{at}.{kind}")
        values = spec.get("values") if kind in _WITH_VALUES else None
        if values:
            if not isinstance(values, Mapping):
                raise self.fail(f"{at}.{kind}.values", "must be a map of strings")
            rendered = _rendered_all(
                {str(k): str(v) for k, v in values.items()}, made, go=self.go,
                at=f"{at}.{kind}.values", fail=self.fail,
            )  # fmt: skip
            for p, done in zip(made, rendered, strict=True):
                if self.go:
                    p["values"] = {**(p.get("values") or {}), **done}
                else:
                    p.update({f"values.{k}": v for k, v in done.items()})
        return self._select(made, generator.get("selector"), f"{at}.selector")

    def _select(self, made: list[Params], selector: Any, at: str) -> list[Params]:
        if not selector:
            return made
        return [p for p in made if self._selects(selector, p, at)]

    def _selects(self, selector: Any, params: Params, at: str) -> bool:
        """apimachinery's structured label selector over the (flattened) parameters."""
        try:
            parsed = label_selector_from_dict(selector)
        except BadRequest as e:
            raise self.fail(at, e.message) from None
        flat: Params = {}
        _flatten(params, "", flat)
        return parsed.matches(flat)

    def _list(self, spec: Mapping[str, Any], at: str) -> list[Params]:
        elements = list(spec.get("elements") or [])
        if spec.get("elementsYaml"):
            try:
                extra = yaml.safe_load(str(spec["elementsYaml"])) or []
            except yaml.YAMLError as e:
                raise self.fail(f"{at}.elementsYaml", f"not YAML: {e}") from None
            if not isinstance(extra, list):
                raise self.fail(f"{at}.elementsYaml", "must be a list of objects")
            elements.extend(extra)
        out: list[Params] = []
        for i, element in enumerate(elements):
            if not isinstance(element, Mapping):
                raise self.fail(f"{at}.elements[{i}]", "must be an object")
            if self.go:
                out.append(dict(element))
                continue
            params: Params = {}
            for key, value in element.items():
                if key == "values" and isinstance(value, Mapping):
                    params.update({f"values.{k}": str(v) for k, v in value.items()})
                elif isinstance(value, str):
                    params[str(key)] = value
                else:
                    raise self.fail(f"{at}.elements[{i}].{key}", "must be a string")
            out.append(params)
        return out

    def _git(self, spec: Mapping[str, Any], at: str) -> list[Params]:
        snap = self.snapshot
        assert snap is not None, "a git generator reads the snapshot"
        prefix = str(spec.get("pathParamPrefix") or "")
        if spec.get("directories"):
            return self._git_directories(snap, spec["directories"], f"{at}.directories", prefix)
        if spec.get("files"):
            return self._git_files(snap, spec["files"], f"{at}.files", prefix)
        raise self.fail(at, "directories or files is required")

    def _items(self, items: Any, at: str) -> list[tuple[re.Pattern[str], bool]]:
        if not isinstance(items, list):
            raise self.fail(at, "must be a list")
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
                raise self.fail(f"{at}[{i}].path", "required")
            try:
                out.append(
                    (
                        _glob(item["path"], double_star=at.endswith("files")),
                        bool(item.get("exclude")),
                    )
                )
            except BadRequest as e:
                raise self.fail(f"{at}[{i}].path", e.message) from None
        return out

    def _git_directories(self, snap: Snapshot, items: Any, at: str, prefix: str) -> list[Params]:
        globs = self._items(items, at)
        out = []
        for d in _directories(snap.files):
            hits = [excl for pattern, excl in globs if pattern.match(d)]
            if hits and not any(hits):
                out.append(_path_params(d, go=self.go is not None, prefix=prefix))
        return out

    def _git_files(self, snap: Snapshot, items: Any, at: str, prefix: str) -> list[Params]:
        globs = self._items(items, at)
        chosen = [
            f for f in sorted(snap.files)
            if any(p.match(f) for p, excl in globs if not excl)
            and not any(p.match(f) for p, excl in globs if excl)
        ]  # fmt: skip
        out: list[Params] = []
        for path, content in sorted(snap.read_many(chosen).items()):
            try:
                loaded = yaml.safe_load(content) or {}
            except yaml.YAMLError as e:
                raise self.fail(at, f"{path}: unable to parse file: {e}") from None
            objects = loaded if isinstance(loaded, list) else [loaded]
            directory, name = posixpath.split(path)
            for obj in objects:
                if not isinstance(obj, Mapping):
                    raise self.fail(at, f"{path}: an object or a list of objects is expected")
                params: Params = dict(obj) if self.go else {}
                if not self.go:
                    _flatten(obj, "", params)
                params.update(
                    _path_params(directory or ".", go=self.go is not None, file=name, prefix=prefix)
                )
                out.append(params)
        return out

    def _clusters(self, spec: Mapping[str, Any], at: str) -> list[Params]:
        selector = spec.get("selector") or {}
        out: list[Params] = []
        for c in self.clusters or (Cluster(name=IN_CLUSTER_NAME, server=IN_CLUSTER_SERVER),):
            # a selector matches cluster Secrets' labels; the local cluster without a
            # Secret only an empty selector
            if selector and not (
                c.secret and self._selects(selector, dict(c.labels), f"{at}.selector")
            ):
                continue
            params: Params = {"name": c.name, "nameNormalized": sanitize(c.name),
                              "server": c.server}  # fmt: skip
            if self.go:
                params["metadata"] = {"labels": dict(c.labels), "annotations": dict(c.annotations)}
            else:
                params |= {f"metadata.labels.{k}": v for k, v in c.labels.items()}
                params |= {f"metadata.annotations.{k}": v for k, v in c.annotations.items()}
            out.append(params)
        return out

    def _matrix(self, spec: Mapping[str, Any], at: str) -> list[Params]:
        children = spec.get("generators") or []
        if not isinstance(children, list) or len(children) != 2:
            raise self.fail(f"{at}.generators", "a matrix takes two generators")
        first = self.run(children[0], f"{at}.generators[0]")
        out: list[Params] = []
        for p in first:
            [inner] = _rendered_all(
                children[1], [p], go=self.go, at=f"{at}.generators[1]", fail=self.fail
            )
            second = self.run(inner, f"{at}.generators[1]")
            out.extend(_overlaid(q, p) if self.go else {**p, **q} for q in second)
        return out

    def _merge(self, spec: Mapping[str, Any], at: str) -> list[Params]:
        """Argo CD's merge: the first generator's sets, each overridden by the later
        generators' set whose `mergeKeys` values are equal."""
        keys = spec.get("mergeKeys")
        children = spec.get("generators")
        if not isinstance(keys, list) or not keys:
            raise self.fail(f"{at}.mergeKeys", "required")
        if not isinstance(children, list) or len(children) < 2:
            raise self.fail(f"{at}.generators", "a merge takes at least two generators")
        sets = [self.run(g, f"{at}.generators[{i}]") for i, g in enumerate(children)]
        names = sorted({str(k) for k in keys})

        def key(p: Params) -> str:
            return json.dumps([p.get(k) for k in names], sort_keys=True, default=str)

        base = {key(p): p for p in sets[0]}
        for later in sets[1:]:
            by_key = {key(p): p for p in later}
            for k, p in base.items():
                if k in by_key:
                    base[k] = _overlaid(p, by_key[k]) if self.go else {**p, **by_key[k]}
        return list(base.values())


def _rendered_all(
    value: Any,
    params: Sequence[Params],
    *,
    go: GoTemplate | None,
    at: str,
    fail: Callable[[str, str], Exception],
) -> list[Any]:
    """`value` rendered with each parameter set (Go templates: one Helm render for all)."""
    if go is None:
        texts = [t for _, t in strings_of(value)]
        return [with_strings(value, [render_string(t, p) for t in texts]) for p in params]

    try:
        return render_go(value, params, at=at, go=go)
    except TemplateError as e:
        field, _, message = e.message.partition(": ")
        raise fail(field, message) from None


def render_string(text: str, params: Params) -> str:
    """fasttemplate: `{{ key }}` is the parameter's string; any other tag stays."""

    def one(m: re.Match[str]) -> str:
        tag = m.group(1).strip()
        found = params.get(tag)
        return found if isinstance(found, str) and tag else m.group(0)

    return _TAG.sub(one, text)


def applications(
    spec: Mapping[str, Any],
    *,
    name: str,
    namespace: str,
    snapshot: Snapshot | None,
    fail: Callable[[str, str], Exception],
    clusters: Sequence[Cluster] = (),
    hosts: HostLookup | None = None,
) -> list[dict[str, Any]]:
    """The Applications `spec` (an ApplicationSet's) makes, sorted by name."""
    try:
        go = go_template(spec)
    except TemplateError as e:
        field, _, message = e.message.partition(": ")
        raise fail(field, message) from None
    gen = Generation(snapshot=snapshot, go=go, fail=fail, clusters=clusters, hosts=hosts)
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise fail("spec.template", "required")
    preserve = bool((spec.get("syncPolicy") or {}).get("preserveResourcesOnDeletion"))
    patch = spec.get("templatePatch")
    if patch is not None and not isinstance(patch, str):
        raise fail("spec.templatePatch", "must be a string (a template of YAML)")
    made: dict[str, dict[str, Any]] = {}
    generators: Sequence[Any] = spec.get("generators") or []
    if not isinstance(generators, list) or not generators:
        raise fail("spec.generators", "at least one generator is required")
    for i, generator in enumerate(generators):
        at = f"spec.generators[{i}]"
        own = next((generator[k].get("template") for k in generator
                    if isinstance(generator.get(k), Mapping)), None)  # fmt: skip
        base = _overlaid(template, own, skip_empty=True) if own else template
        params = gen.run(generator, at)
        apps = _rendered_all(base, params, go=go, at="spec.template", fail=fail)
        patches = (patch_texts(patch, params, go=go, render=render_string, fail=fail)
                   if patch else [""] * len(apps))  # fmt: skip
        for app, text in zip(apps, patches, strict=True):
            md = dict(app.get("metadata") or {})
            md["namespace"] = namespace
            finalizers = list(md.get("finalizers") or [])
            if not preserve and not any(str(f).startswith(FINALIZER) for f in finalizers):
                finalizers.append(FINALIZER)
            md["finalizers"] = finalizers
            md["labels"] = dict(md.get("labels") or {})
            made_app: dict[str, Any] = {
                "apiVersion": API_VERSION,
                "kind": "Application",
                "metadata": md,
                "spec": app.get("spec") or {},
            }
            if text:
                made_app = patched(made_app, text, fail=fail)
            app_name = made_app["metadata"].get("name")
            if not app_name or "{{" in str(app_name):
                raise fail("spec.template.metadata.name", f"{app_name!r} renders no name")
            if app_name in made:
                raise fail(at, f"more than one Application is named {app_name!r}")
            made[app_name] = made_app
    apps = [made[k] for k in sorted(made)]
    steps = steps_of(spec, fail)
    if steps is not None:
        apply_steps(apps, steps)
    return apps


def _overlaid(
    base: Mapping[str, Any], over: Mapping[str, Any], *, skip_empty: bool = False
) -> dict[str, Any]:
    """`over` laid on `base`, maps merged key by key (mergo: `WithOverride` for parameters;
    `skip_empty` for a generator's template, whose empty fields keep the ApplicationSet's)."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _overlaid(out[k], v, skip_empty=skip_empty)
        elif not skip_empty or v not in (None, "", [], {}):
            out[k] = v
    return out
