"""Argo CD's ApplicationSet generators and template, as the ApplicationSet controller runs
them: the Application objects an ApplicationSet makes of one revision of a repository.

Generators: `list` (`elements`; a `values` map becomes `values.<key>`), `git`
`directories` (Go's `path.Match` globs over the repository's directories, hidden ones
left out; `exclude: true` wins) and `files` (`**` globs; each YAML/JSON file, an object
or a list of objects, flattened to dotted keys), `clusters` (gitkrm's own target only:
`in-cluster`, when no selector asks for labels) and `matrix` (two generators, every pair,
their parameters merged). Each may have a `selector` (`matchLabels`) over its
parameters. The template is rendered per parameter set with Argo CD's default
fasttemplate (`{{ key }}` in every string; an unknown key is left as written), or with
`goTemplate: true` for plain field references (`{{ .path.basename }}`) only. Pure:
`Snapshot` reads memory or one `git cat-file`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import yaml

from gitkrm.errors import BadRequest
from gitkrm.source import Snapshot

from .argocd_spec import API_VERSION, FINALIZER, IN_CLUSTER_NAME, IN_CLUSTER_SERVER

Params = dict[str, Any]
_TAG: Final = re.compile(r"\{\{(.*?)\}\}", re.S)
_GO_FIELD: Final = re.compile(r"^-?\s*\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)\s*-?$")
_NOT_DNS: Final = re.compile(r"[^-a-z0-9.]")
GENERATORS: Final = ("list", "git", "clusters", "matrix")
_SUPPORTED: Final = "list, git (directories, files), clusters (in-cluster) and matrix"


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


def _path_params(directory: str, *, go: bool, file: str | None = None) -> Params:
    base = posixpath.basename(directory)
    if go:
        p: Params = {"path": directory, "basename": base, "basenameNormalized": sanitize(base)}
        p["segments"] = directory.split("/")
        if file is not None:
            p["filename"], p["filenameNormalized"] = file, sanitize(file)
        return {"path": p}
    out: Params = {
        "path": directory,
        "path.basename": base,
        "path.basenameNormalized": sanitize(base),
    }
    if file is not None:
        out["path.filename"], out["path.filenameNormalized"] = file, sanitize(file)
    for i, seg in enumerate(directory.split("/")):
        if seg:
            out[f"path[{i}]"] = seg
    return out


def _glob(pattern: str, *, double_star: bool) -> re.Pattern[str]:
    """Go's `path.Match` (`*` stays in a segment); with `double_star`, `**` crosses them."""
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if double_star and pattern.startswith("**", i):
            out += ".*"
            i += 2
            if pattern.startswith("/", i):
                out, i = out + "(?:/)?", i + 1
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
        self, *, snapshot: Snapshot | None, go: bool, fail: Callable[[str, str], Exception]
    ):
        self.snapshot = snapshot
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
            raise self.fail(f"{at}.{kind}", f"not supported: gitkrm generates {_SUPPORTED}")
        spec = generator[kind] or {}
        if not isinstance(spec, Mapping):
            raise self.fail(f"{at}.{kind}", "must be an object")
        made: list[Params] = getattr(self, f"_{kind}")(spec, f"{at}.{kind}")
        values = spec.get("values") if kind != "list" else None
        if values:
            for p in made:
                for k, v in values.items():
                    p[f"values.{k}"] = render_string(str(v), p, go=self.go)
        return self._select(made, generator.get("selector"), f"{at}.selector")

    def _select(self, made: list[Params], selector: Any, at: str) -> list[Params]:
        if not selector:
            return made
        if not isinstance(selector, Mapping) or set(selector) - {"matchLabels"}:
            raise self.fail(at, "only matchLabels is supported")
        labels = selector.get("matchLabels") or {}
        return [p for p in made if all(str(p.get(k)) == str(v) for k, v in labels.items())]

    def _list(self, spec: Mapping[str, Any], at: str) -> list[Params]:
        if spec.get("elementsYaml"):
            raise self.fail(f"{at}.elementsYaml", "not supported: give elements")
        out: list[Params] = []
        for i, element in enumerate(spec.get("elements") or []):
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
        if spec.get("pathParamPrefix"):
            raise self.fail(f"{at}.pathParamPrefix", "not supported")
        if spec.get("directories"):
            return self._git_directories(snap, spec["directories"], f"{at}.directories")
        if spec.get("files"):
            return self._git_files(snap, spec["files"], f"{at}.files")
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

    def _git_directories(self, snap: Snapshot, items: Any, at: str) -> list[Params]:
        globs = self._items(items, at)
        out = []
        for d in _directories(snap.files):
            hits = [excl for pattern, excl in globs if pattern.match(d)]
            if hits and not any(hits):
                out.append(_path_params(d, go=self.go))
        return out

    def _git_files(self, snap: Snapshot, items: Any, at: str) -> list[Params]:
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
                params.update(_path_params(directory or ".", go=self.go, file=name))
                out.append(params)
        return out

    def _clusters(self, spec: Mapping[str, Any], at: str) -> list[Params]:
        selector = spec.get("selector") or {}
        if selector.get("matchLabels") or selector.get("matchExpressions"):
            return []  # no cluster Secret: gitkrm's own target carries no labels
        params: Params = {
            "name": IN_CLUSTER_NAME,
            "nameNormalized": IN_CLUSTER_NAME,
            "server": IN_CLUSTER_SERVER,
        }
        if self.go:
            params["metadata"] = {"labels": {}, "annotations": {}}
        return [params]

    def _matrix(self, spec: Mapping[str, Any], at: str) -> list[Params]:
        children = spec.get("generators") or []
        if not isinstance(children, list) or len(children) != 2:
            raise self.fail(f"{at}.generators", "a matrix takes two generators")
        first = self.run(children[0], f"{at}.generators[0]")
        out: list[Params] = []
        for p in first:
            second = self.run(_rendered(children[1], p, go=self.go), f"{at}.generators[1]")
            out.extend({**p, **q} for q in second)
        return out


def _rendered(value: Any, params: Params, *, go: bool) -> Any:
    """`value` with every string (map keys too) rendered."""
    if isinstance(value, str):
        return render_string(value, params, go=go)
    if isinstance(value, Mapping):
        return {render_string(str(k), params, go=go): _rendered(v, params, go=go)
                for k, v in value.items()}  # fmt: skip
    if isinstance(value, list):
        return [_rendered(v, params, go=go) for v in value]
    return value


def _go_value(params: Params, path: str) -> Any:
    value: Any = params
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise BadRequest(f"map has no entry for key {part!r}")
        value = value[part]
    return value


def render_string(text: str, params: Params, *, go: bool) -> str:
    def one(m: re.Match[str]) -> str:
        tag = m.group(1).strip()
        if go:
            field = _GO_FIELD.match(tag)
            if field is None:
                raise BadRequest(
                    f"{m.group(0)!r}: gitkrm renders goTemplate field references only "
                    "({{ .path.basename }})"
                )
            value = _go_value(params, field.group(1))
            return value if isinstance(value, str) else str(value)
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
) -> list[dict[str, Any]]:
    """The Applications `spec` (an ApplicationSet's) makes, sorted by name."""
    go = bool(spec.get("goTemplate"))
    gen = Generation(snapshot=snapshot, go=go, fail=fail)
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise fail("spec.template", "required")
    preserve = bool((spec.get("syncPolicy") or {}).get("preserveResourcesOnDeletion"))
    made: dict[str, dict[str, Any]] = {}
    generators: Sequence[Any] = spec.get("generators") or []
    if not isinstance(generators, list) or not generators:
        raise fail("spec.generators", "at least one generator is required")
    for i, generator in enumerate(generators):
        at = f"spec.generators[{i}]"
        for params in gen.run(generator, at):
            own = next((generator[k].get("template") for k in generator
                        if isinstance(generator.get(k), Mapping)), None)  # fmt: skip
            base = _merge(template, own) if own else template
            try:
                app = _rendered(base, params, go=go)
            except BadRequest as e:
                raise fail("spec.template", e.message) from None
            md = dict(app.get("metadata") or {})
            app_name = md.get("name")
            if not app_name or "{{" in str(app_name):
                raise fail("spec.template.metadata.name", f"{app_name!r} renders no name")
            if app_name in made:
                raise fail(at, f"more than one Application is named {app_name!r}")
            md["name"] = app_name
            md["namespace"] = namespace
            finalizers = list(md.get("finalizers") or [])
            if not preserve and not any(str(f).startswith(FINALIZER) for f in finalizers):
                finalizers.append(FINALIZER)
            md["finalizers"] = finalizers
            labels = dict(md.get("labels") or {})
            md["labels"] = labels
            made[app_name] = {
                "apiVersion": API_VERSION,
                "kind": "Application",
                "metadata": md,
                "spec": app.get("spec") or {},
            }
    return [made[k] for k in sorted(made)]


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(out[k], v)
        elif v not in (None, "", [], {}):
            out[k] = v
    return out
