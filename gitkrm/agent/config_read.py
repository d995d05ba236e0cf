"""Reading GitSource objects into `SourceConfig`: from a `--config` file or the store.

Both places go through `from_object`, which checks the object against the CRD's schema
first (so both refuse the same mistakes and get the same defaults) and makes the paths
it names absolute against the file's folder.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitkrm.charts.spec import ChartRef, HelmSpec
from gitkrm.errors import BadRequest, GitkrmError, ManifestError
from gitkrm.health.expressions import HealthChecks
from gitkrm.krm import Obj, load_manifests
from gitkrm.schema import Registry
from gitkrm.source import Auth, GitRef, HttpsAuth, SecretRef, SshAuth, VerifySpec
from gitkrm.sync.options import (
    DEFAULT_HEALTH_TIMEOUT,
    DEFAULT_PRUNE_BUDGET,
    AdoptionPolicy,
    IgnoreDifference,
    PruneBudget,
)

from .config import (
    SourceConfig,
    abs_path,
    check_name,
    is_git_repository,
    is_remote_url,
    resolve_url,
)
from .crd import API_VERSION, KIND, NAMESPACE, gitsource_crd
from .duration import format_duration, parse_duration
from .postbuild_config import from_spec as postbuild_from_spec
from .tree.model import Peer


def _registry() -> Registry:
    reg = Registry.builtin()
    reg.register_crd(gitsource_crd())
    return reg


def _ref(spec: Mapping[str, Any]) -> GitRef:
    ref = spec.get("ref") or {}
    return GitRef.from_flags(
        branch=ref.get("branch"),
        tag=ref.get("tag"),
        commit=ref.get("commit"),
        semver=ref.get("semver"),
        ref=ref.get("name"),
    )


def _auth(spec: Mapping[str, Any], base: Path) -> Auth | None:
    auth = spec.get("auth")
    if not auth:
        return None
    if "sshKeyFile" in auth or "knownHostsFile" in auth:
        if "sshKeyFile" not in auth or "knownHostsFile" not in auth:
            raise BadRequest("spec.auth: SSH needs both sshKeyFile and knownHostsFile")
        if any(k in auth for k in ("passwordFile", "passwordEnv", "username")):
            raise BadRequest("spec.auth: give SSH keys or a password, not both")
        return SshAuth(
            key_file=abs_path(base, auth["sshKeyFile"]),
            known_hosts=abs_path(base, auth["knownHostsFile"]),
        )
    if ("passwordFile" in auth) == ("passwordEnv" in auth):
        raise BadRequest("spec.auth: give exactly one of passwordFile and passwordEnv")
    secret = (
        SecretRef(file=abs_path(base, auth["passwordFile"]))
        if "passwordFile" in auth
        else SecretRef(env=auth["passwordEnv"])
    )
    return HttpsAuth(
        password=secret, username=auth.get("username") or "git", bearer=bool(auth.get("bearer"))
    )


def _ignores(spec: Mapping[str, Any]) -> tuple[IgnoreDifference, ...]:
    out: list[IgnoreDifference] = []
    for i, item in enumerate(spec.get("ignoreDifferences") or ()):
        for p in item["jsonPointers"]:
            if p and not p.startswith("/"):
                raise BadRequest(
                    f"spec.ignoreDifferences[{i}].jsonPointers: {p!r} is not a JSON pointer "
                    "(it starts with '/', as /spec/replicas)"
                )
        out.append(
            IgnoreDifference(
                group=item.get("group") or "",
                kind=item["kind"],
                json_pointers=tuple(item["jsonPointers"]),
                name=item.get("name") or None,
                namespace=item.get("namespace") or None,
            )
        )
    return tuple(out)


def from_object(obj: Obj, *, base: Path, registry: Registry | None = None) -> SourceConfig:
    """A source from a GitSource object, checked against the CRD schema (which defaults it)."""
    obj = copy.deepcopy({k: v for k, v in obj.items() if k != "status"})
    meta = obj.setdefault("metadata", {})
    name = check_name(meta.get("name") or "", what="GitSource name")
    if meta.get("namespace") not in (None, "", NAMESPACE):
        raise BadRequest(f"GitSource {name}: namespace must be {NAMESPACE} (or left out)")
    meta["namespace"] = NAMESPACE
    (registry or _registry()).admit(obj)
    spec = obj["spec"]
    chart = _chart(name, spec)
    url = spec["url"] if chart is not None else resolve_url(spec["url"], base)
    directory = (
        chart is None
        and not is_remote_url(url)
        and Path(url).is_dir()
        and not is_git_repository(Path(url))
    )
    if directory and spec.get("ref"):
        raise BadRequest(f"{url} is a plain directory, not a Git repository: it has no ref")
    if directory and (spec.get("auth") or spec.get("verify")):
        raise BadRequest(f"{url} is a plain directory: auth and verify need a Git repository")
    timeout = spec.get("timeout")
    interval = parse_duration(spec.get("interval") or "30s", what="spec.interval")
    if interval <= 0:
        raise BadRequest("spec.interval must be more than 0s")
    helm = HelmSpec.from_spec(spec["helm"], base=base) if spec.get("helm") else None
    if chart is not None and (helm is None or helm.release_name is None):
        # A chart release is named after its chart unless it says otherwise.
        helm = dataclasses.replace(helm or HelmSpec(), release_name=chart.name)
    return SourceConfig(
        name=name,
        url=url,
        ref=None if directory or chart is not None else _ref(spec),
        path=spec.get("path") or "",
        ignore=spec.get("ignore"),
        interval=interval,
        retry_interval=_retry_interval(spec),
        timeout=parse_duration(timeout, what="spec.timeout") if timeout else None,
        health_timeout=_health_timeout(spec),
        default_namespace=spec.get("defaultNamespace") or None,
        prune=spec["prune"],
        allow_empty=spec["allowEmpty"],
        prune_budget=_prune_budget(spec),
        adoption=AdoptionPolicy(spec["adoption"]),
        ignore_differences=_ignores(spec),
        suspend=spec["suspend"],
        auth=_auth(spec, base),
        ca_file=abs_path(base, spec["caFile"]) if spec.get("caFile") else None,
        verify=VerifySpec(keyring=abs_path(base, spec["verify"]["keyring"]))
        if spec.get("verify")
        else None,
        postbuild=postbuild_from_spec(spec, base=base),
        helm=helm,
        health_checks=HealthChecks.from_spec(spec.get("healthCheckExprs")),
        interpret=frozenset(Peer(p) for p in spec.get("interpret") or ()),
        chart=chart,
    )


def _chart(name: str, spec: Mapping[str, Any]) -> ChartRef | None:
    """`spec.chart`: one release of a chart of the chart repository `spec.url`."""
    if not spec.get("chart"):
        return None
    url = str(spec["url"])
    if not url.startswith(("http://", "https://", "oci://")):
        raise BadRequest(
            f"GitSource {name}: spec.chart needs spec.url to be an http(s):// chart "
            f"repository or an oci:// registry, got {url!r}"
        )
    if spec.get("ref") or spec.get("path") or spec.get("auth") or spec.get("verify"):
        raise BadRequest(f"GitSource {name}: spec.chart takes no ref, path, auth or verify")
    return ChartRef(
        repository=url,
        name=str(spec["chart"]["name"]),
        version=str(spec["chart"].get("version") or "*"),
    )


def _prune_budget(spec: Mapping[str, Any]) -> PruneBudget:
    raw = spec.get("pruneBudget")
    if raw is None:
        return DEFAULT_PRUNE_BUDGET
    default = DEFAULT_PRUNE_BUDGET
    return PruneBudget(
        count=int(raw.get("count", default.count)),
        percent=int(raw.get("percent", default.percent)),
    )


def _retry_interval(spec: Mapping[str, Any]) -> float | None:
    if not spec.get("retryInterval"):
        return None
    retry = parse_duration(spec["retryInterval"], what="spec.retryInterval")
    if retry <= 0:
        raise BadRequest("spec.retryInterval must be more than 0s")
    return retry


def _health_timeout(spec: Mapping[str, Any]) -> float:
    raw = spec.get("healthTimeout")
    if not raw:
        return DEFAULT_HEALTH_TIMEOUT
    value = parse_duration(raw, what="spec.healthTimeout")
    if value <= 0:
        raise BadRequest("spec.healthTimeout must be more than 0s")
    return value


def load_config_file(path: Path, *, default_interval: float | None = None) -> list[SourceConfig]:
    """Every GitSource of a `--config` file; errors name the file, line and object."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadRequest(f"config file {path} does not exist") from None
    except OSError as e:
        raise BadRequest(f"config file {path} can't be read: {e.strerror}") from None
    manifests = load_manifests(data, path=str(path))
    if not manifests:
        raise BadRequest(f"{path}: no GitSource objects in the config file")
    registry = _registry()
    base = path.resolve().parent
    out: list[SourceConfig] = []
    seen: dict[str, int] = {}
    for m in manifests:
        name = (m.obj.get("metadata") or {}).get("name") or "<unnamed>"
        if m.obj.get("apiVersion") != API_VERSION or m.obj.get("kind") != KIND:
            raise ManifestError(
                f"expected {API_VERSION} {KIND}, found "
                f"{m.obj.get('apiVersion')} {m.obj.get('kind')}",
                path=m.path,
                line=m.line,
            )
        obj = m.obj
        if default_interval is not None and "interval" not in (obj.get("spec") or {}):
            obj = {
                **obj,
                "spec": {**(obj.get("spec") or {}), "interval": format_duration(default_interval)},
            }
        try:
            config = from_object(obj, base=base, registry=registry)
        except GitkrmError as e:
            raise ManifestError(e.message, path=m.path, line=m.line, object=f"{KIND} {name}") from e
        if config.name in seen:
            raise ManifestError(
                f"GitSource {config.name} is defined twice (first at line {seen[config.name]})",
                path=m.path,
                line=m.line,
            )
        seen[config.name] = m.line
        out.append(config)
    return out
