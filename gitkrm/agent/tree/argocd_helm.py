"""The Helm sources of Argo CD Applications (docs/helmreleases.md has the field table).

- `chart` + `repoURL`: a chart of a Helm repository (`https://...`) or an OCI registry
  (`oci://host/path`, or `host/path` without a scheme, as Argo CD writes it), version
  `targetRevision` (a semver range too): the child is a chart release
  (`gitkrm.charts.source`); credentials from Argo CD's repository Secrets (`username`,
  `password`, `tlsClientCertData` not honoured), kept in memory and masked.
- `path` with a `Chart.yaml` (a chart in Git) and `helm` options: the Git child with them.
- `helm`: `valueFiles` (relative to the chart; `$<ref>/<path>` a file of a `ref` source),
  `values` (YAML text) or `valuesObject` (over `values`), `parameters` (`--set`;
  `forceString` as strings), `fileParameters` (`--set-file`), `releaseName` (default: the
  Application's name), `namespace`, `skipCrds`, `kubeVersion`, `apiVersions`,
  `ignoreMissingValueFiles` (Argo CD's build environment, `$ARGOCD_APP_NAME` and the others,
  substituted per revision in parameter values and file paths: `gitkrm.sync.buildenv`);
  `passCredentials`, `skipSchemaValidation`, `skipTests` (tests
  never run anyway) and `version` reported when they ask for what gitkrm does not do.
- Multi-source Applications: `ref` sources (a `ref` and no `path` or `chart`) are mounted
  under `$<ref>/` of the child (`gitkrm.source.mounted`); exactly one other source renders.
- Rendered as Argo CD renders (`helm template`): always an install, Helm hooks on every
  sync (`HelmSpec.template_mode`, docs/charts.md).

`argocd.read` calls `sources` to split an Application's sources and `helm_source` for its
rendered one; the result is laid over the child's Git configuration.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any, Final, cast

import orjson
import yaml

from gitkrm.charts.spec import ChartRef, HelmSpec, RepositoryAuth
from gitkrm.krm import Obj, masking
from gitkrm.sync.buildenv import names_variable

from ..config import Mount
from .argocd_repo import repository, repository_secret, secret_text
from .argocd_spec import Source
from .fields import Fail, as_list
from .model import Context, Unhonoured

_HONOURED: Final = frozenset(
    {"valueFiles", "values", "valuesObject", "parameters", "fileParameters", "releaseName",
     "namespace", "skipCrds", "kubeVersion", "apiVersions", "ignoreMissingValueFiles",
     "skipTests"}
)  # fmt: skip
_ASKED: Final = {  # honoured when false (or v3)
    "passCredentials": "credentials go to the chart repository's own host only",
    "skipSchemaValidation": "values.schema.json is always enforced by Helm",
}


def sources(
    spec: Mapping[str, Any], fail: Fail
) -> tuple[Source, str, dict[str, tuple[Source, str]]]:
    """The source that renders (and its field) and the `ref` sources by name."""
    items = spec.get("sources")
    if items is None:
        source = spec.get("source")
        if not isinstance(source, Mapping):
            raise fail("spec.source", "required (or spec.sources)")
        return cast(Source, source), "spec.source", {}
    if spec.get("source"):
        raise fail("spec.sources", "give spec.source or spec.sources, not both")
    if not isinstance(items, list):
        raise fail("spec.sources", "must be a list")
    rendered: list[tuple[Source, str]] = []
    refs: dict[str, tuple[Source, str]] = {}
    for i, item in enumerate(items):
        at = f"spec.sources[{i}]"
        if not isinstance(item, Mapping):
            raise fail(at, "must be an object")
        src = cast(Source, item)
        if src.get("ref") and not src.get("path") and not src.get("chart"):
            name = str(src["ref"])
            if name in refs:
                raise fail(f"{at}.ref", f"{name!r} is the ref of another source too")
            refs[name] = (src, at)
        else:
            rendered.append((src, at))
    if len(rendered) != 1:
        raise fail(
            "spec.sources",
            f"{len(rendered)} sources render: gitkrm renders one source per Application "
            "(the others may be `ref` sources of value files)",
        )
    return rendered[0][0], rendered[0][1], refs


def _chart_url(repo_url: str) -> str:
    """Argo CD writes OCI Helm repositories without a scheme."""
    if repo_url.startswith(("http://", "https://", "oci://")):
        return repo_url.rstrip("/")
    return "oci://" + repo_url.strip("/")


async def _auth(
    url: str, repo_url: str, *, namespace: str, ctx: Context
) -> tuple[RepositoryAuth, ...]:
    secret = await repository_secret(repo_url, namespace=namespace, ctx=ctx)
    if secret is None:
        return ()
    username = secret_text(secret, "username") or None
    password = secret_text(secret, "password") or None
    ca = secret_text(secret, "tlsClientCertData") or None
    if password:
        masking.remember([password])
    if username is None and password is None:
        return ()
    return (RepositoryAuth(url=url, username=username, password=password, ca_data=ca),)


def in_repository(f: str, chart_dir: str, refs: Mapping[str, object]) -> str | None:
    """A value file of a chart in Git as Argo CD's repo server resolves it: a `$ref/` path
    or one that names a build variable as written; else relative to the chart's directory,
    or, starting with `/`, to the repository's top (`pathutil.ResolveValueFilePathOrUrl`).
    A `$name` that is neither a ref nor a variable is substituted away first (Argo CD's
    `Envsubst`: `$values/x.yaml` without a `values` ref is `/x.yaml`). One outside the
    chart's directory is returned as `/<path from the repository's top>`; None when it
    climbs out of the repository."""
    if f.startswith("$"):
        name = f[1:].partition("/")[0]
        if name in refs or names_variable(f):
            return f
        f = f[1 + len(name) :]
    top = posixpath.normpath(chart_dir.strip("/") or ".")
    whole = posixpath.normpath(f.lstrip("/") if f.startswith("/") else posixpath.join(top, f))
    if whole == ".." or whole.startswith("../"):
        return None
    if top == ".":
        return whole
    if whole == top or whole.startswith(top + "/"):
        return posixpath.relpath(whole, top)
    return "/" + whole


async def helm_source(
    obj: Obj,
    source: Source,
    *,
    at: str,
    fail: Fail,
    ctx: Context,
    namespace: str,
    target_ns: str | None,
    refs: Mapping[str, tuple[Source, str]],
    unhonoured: list[Unhonoured],
) -> dict[str, Any]:
    """The child's configuration fields for the rendered source `source` of `obj` (and
    its `refs`); what is not honoured goes to `unhonoured`."""
    md = obj.get("metadata") or {}
    helm = source.get("helm") or {}
    if not isinstance(helm, Mapping):
        raise fail(f"{at}.helm", "must be an object")
    h = f"{at}.helm"
    for key in helm:
        if key in _ASKED:
            if helm[key]:
                unhonoured.append(Unhonoured(f"{h}.{key}", _ASKED[key]))
        elif key == "version":
            if str(helm[key]) != "v3":
                unhonoured.append(Unhonoured(f"{h}.version", "Helm v4 renders (as v3 would)"))
        elif key not in _HONOURED:
            unhonoured.append(Unhonoured(f"{h}.{key}", "not a field gitkrm knows"))
    value_files = [str(f) for f in as_list(helm.get("valueFiles"), f"{h}.valueFiles", fail)]
    in_git = not source.get("chart")
    for i, f in enumerate(value_files):
        if "://" in f:
            raise fail(f"{h}.valueFiles[{i}]", f"{f!r}: value files from URLs are not fetched")
        if not in_git and f.startswith("$") and not names_variable(f):
            name = f[1:].partition("/")[0]
            if name not in refs:
                raise fail(f"{h}.valueFiles[{i}]", f"{f!r}: no source has ref {name!r}")
        resolved = in_repository(f, str(source.get("path") or ""), refs) if in_git else f
        if resolved is None or (not in_git and (f.startswith("/") or ".." in f.split("/"))):
            raise fail(f"{h}.valueFiles[{i}]", f"{f!r} must stay inside the repository")
        value_files[i] = resolved
    values: Any = helm.get("valuesObject")
    if values is None and helm.get("values"):
        try:
            values = yaml.safe_load(str(helm["values"]))
        except yaml.YAMLError as e:
            raise fail(f"{h}.values", f"not YAML: {e}") from None
    values = values or {}
    if not isinstance(values, dict):
        raise fail(f"{h}.values", "must be a mapping of values")
    sets: list[str] = []
    strings: list[tuple[str, str]] = []
    for i, p in enumerate(as_list(helm.get("parameters"), f"{h}.parameters", fail)):
        if not isinstance(p, Mapping) or not p.get("name"):
            raise fail(f"{h}.parameters[{i}]", "needs a name")
        if p.get("forceString"):
            strings.append((str(p["name"]), str(p.get("value") or "")))
        else:
            sets.append(f"{p['name']}={p.get('value') or ''}")
    files: list[tuple[str, str]] = []
    for i, p in enumerate(as_list(helm.get("fileParameters"), f"{h}.fileParameters", fail)):
        if not isinstance(p, Mapping) or not p.get("name") or not p.get("path"):
            raise fail(f"{h}.fileParameters[{i}]", "needs a name and a path")
        path = str(p["path"])
        resolved = in_repository(path, str(source.get("path") or ""), refs) if in_git else path
        if resolved is None:
            raise fail(f"{h}.fileParameters[{i}]", f"{path!r} must stay inside the repository")
        files.append((str(p["name"]), resolved))
    extra: dict[str, Any] = {}
    repositories: tuple[RepositoryAuth, ...] = ()
    chart = source.get("chart")
    if chart:
        repo_url = str(source.get("repoURL") or "")
        url = _chart_url(repo_url)
        repositories = await _auth(url, repo_url, namespace=namespace, ctx=ctx)
        extra |= {
            "url": url,
            "ref": None,
            "path": "",
            "auth": None,
            "ca_file": None,
            "verify": None,
            "chart": ChartRef(
                repository=url,
                name=str(chart),
                version=str(source.get("targetRevision") or "*"),
            ),
        }
    extra["helm"] = HelmSpec(
        release_name=str(helm.get("releaseName") or md.get("name") or ""),
        namespace=str(helm.get("namespace") or target_ns or "") or None,
        value_files=tuple(value_files),
        values_json=orjson.dumps(values, option=orjson.OPT_SORT_KEYS),
        set=tuple(sets),
        skip_crds=bool(helm.get("skipCrds")),
        kube_version=str(helm.get("kubeVersion") or "") or None,
        api_versions=tuple(str(v) for v in helm.get("apiVersions") or ()),
        repositories=repositories,
        template_mode=True,
        set_string=tuple(strings),
        file_parameters=tuple(files),
        ignore_missing_value_files=bool(helm.get("ignoreMissingValueFiles")),
    )
    mounts: list[Mount] = []
    used = {
        f.partition("/")[0][1:]
        for f in (*value_files, *(p for _, p in files))
        if f.startswith("$") and not names_variable(f)
    }
    for name, (ref_source, ref_at) in sorted(refs.items()):
        if name not in used:
            unhonoured.append(Unhonoured(f"{ref_at}.ref", f"{name!r}: no value file reads it"))
            continue
        repo = await repository(
            str(ref_source.get("repoURL") or ""), str(ref_source.get("targetRevision") or ""),
            namespace=namespace, ctx=ctx, fail=fail, at=ref_at,
        )  # fmt: skip
        unhonoured.extend(repo.unhonoured)
        if repo.ref is None:
            raise fail(f"{ref_at}.repoURL", "a ref source needs a Git repository and revision")
        mounts.append(
            Mount(name=name, url=repo.url, ref=repo.ref, auth=repo.auth, ca_file=repo.ca_file)
        )
    if mounts:
        extra["mounts"] = tuple(mounts)
    return extra
