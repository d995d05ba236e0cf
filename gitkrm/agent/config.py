"""What the agent syncs: sources from flags (one) or a `--config` file of GitSource objects.

A source's configuration and its GitSource object are the same thing in two shapes:
`from_object` reads a GitSource (from a file or the store, checked against the CRD's
schema first, so both places refuse the same mistakes), `to_object` writes one. Paths in a
file are relative to the file; they are stored absolute, so the stored object means the
same whoever reads it.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gitkrm.charts.spec import ChartRef, HelmSpec
from gitkrm.errors import BadRequest, GitkrmError, ManifestError
from gitkrm.health.expressions import HealthChecks
from gitkrm.krm import Obj, load_manifests
from gitkrm.krm.names import is_dns1123_label
from gitkrm.schema import Registry
from gitkrm.source import Auth, GitRef, HttpsAuth, RefKind, SecretRef, SshAuth, VerifySpec
from gitkrm.source.redact import split_userinfo
from gitkrm.sync.appsource_spec import AppSource
from gitkrm.sync.options import (
    DEFAULT_HEALTH_TIMEOUT,
    DEFAULT_PRUNE_BUDGET,
    AdoptionPolicy,
    IgnoreDifference,
    PruneBudget,
    SyncOptions,
)
from gitkrm.sync.overlay_spec import Overlay
from gitkrm.sync.postbuild_spec import PostBuildSpec
from gitkrm.sync.syncwindows import SyncWindow

from .crd import API_VERSION, KIND, NAMESPACE, gitsource_crd
from .duration import format_duration, parse_duration
from .postbuild_config import from_spec as postbuild_from_spec
from .postbuild_config import to_spec as postbuild_to_spec
from .tree.model import Peer

if TYPE_CHECKING:
    from gitkrm.source.artifact_copy import ArtifactRecipe
    from gitkrm.source.oci_source import OciArtifact

    from .tree.flux_generated import GeneratedArtifacts

ApplyMode = Literal["client-side", "server-side"]
DEFAULT_INTERVAL = 30.0
DEFAULT_SOURCE_NAME = "default"


def check_name(value: str, *, what: str) -> str:
    """A source or agent name: a DNS-1123 label (it becomes part of object names and labels)."""
    errs = is_dns1123_label(value)
    if errs:
        raise BadRequest(f"{what} {value!r} is not a valid name: {'; '.join(errs)}")
    return value


def is_remote_url(url: str) -> bool:
    """A URL git reaches over a protocol (`https://`, `ssh://`, `git@host:path`), not a path."""
    if "://" in url:
        return True
    colon, slash = url.find(":"), url.find("/")
    return colon > 1 and (slash < 0 or colon < slash)  # scp-like, not C:\ on Windows


def is_git_repository(path: Path) -> bool:
    """The top of a repository on this machine: a bare one, or a work tree with `.git`."""
    if (path / ".git").exists():
        return True
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


@dataclass(frozen=True, slots=True)
class Mount:
    """Another Git repository whose files a source sees under `$<name>/` (an Argo CD
    multi-source Application's `ref` source: `$values/...` value files)."""

    name: str
    url: str = field(repr=False)
    ref: GitRef
    auth: Auth | None = None
    ca_file: Path | None = None


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """One source. `url` may carry user-info (used as credentials, never shown): see
    `safe_url`. `ref` is None for a plain directory (it has no history to pick from)."""

    name: str
    url: str = field(repr=False)
    ref: GitRef | None = field(default_factory=lambda: GitRef(RefKind.BRANCH, "main"))
    path: str = ""
    interval: float = DEFAULT_INTERVAL
    timeout: float | None = None
    health_timeout: float = DEFAULT_HEALTH_TIMEOUT  # waves, hooks and prune waves
    default_namespace: str | None = None
    prune: bool = True
    allow_empty: bool = False
    prune_budget: PruneBudget = DEFAULT_PRUNE_BUDGET
    adoption: AdoptionPolicy = AdoptionPolicy.NEVER
    ignore_differences: tuple[IgnoreDifference, ...] = ()
    suspend: bool = False
    auth: Auth | None = None
    ca_file: Path | None = None
    verify: VerifySpec | None = None
    postbuild: PostBuildSpec | None = None  # substitution and SOPS decryption
    helm: HelmSpec | None = None  # how the source's Helm charts render
    health_checks: HealthChecks | None = None  # spec.healthCheckExprs (compiled)
    interpret: frozenset[Peer] = frozenset()
    """The peers whose declaring objects become child sources (`spec.interpret`,
    `--interpret`); gitkrm's own GitSource objects always do."""
    chart: ChartRef | None = None
    """A chart release: the content is one release of this chart of the chart repository
    `url` (http(s):// or oci://), rendered with `helm` (gitkrm.charts.source)."""
    overlay: Overlay | None = None  # kustomize transforms over the render (Flux, Argo CD)
    mounts: tuple[Mount, ...] = ()  # other repositories under `$<name>/` (gitkrm.source.mounted)
    app_source: AppSource | None = None
    """Argo CD's path rules and application-wide sync options (an interpreted Application's
    child only; not a GitSource field)."""
    automated: bool = True
    """False: each pass compares the revision with the target and reports what differs,
    never applies it (an Argo CD Application without `syncPolicy.automated`)."""
    self_heal: bool = True
    """False: a change made in the target is reported, not set back, until the next
    revision (Argo CD's `automated.selfHeal: false`)."""
    sync_windows: tuple[SyncWindow, ...] = ()
    """Argo CD's sync windows of the Application's project that apply to it: while they
    forbid a sync, a pass compares instead (`gitkrm.sync.syncwindows`)."""
    artifact: ArtifactRecipe | None = None
    """The content is this artifact of the repository (a Flux ExternalArtifact an
    ArtifactGenerator makes: `gitkrm.source.artifact`), seen at `path`; not a GitSource
    field."""
    oci: OciArtifact | None = None
    """The content is this OCI artifact (a Flux OCIRepository: `gitkrm.source.oci_source`),
    unpacked and seen at `path`; `url` and `ref` name it. Not a GitSource field."""
    generator: GeneratedArtifacts | None = None
    """The content is the ExternalArtifact objects of an ArtifactGenerator over the
    repository (`tree.flux_generated`); not a GitSource field."""

    @property
    def safe_url(self) -> str:
        return split_userinfo(self.url).url

    @property
    def is_directory(self) -> bool:
        return self.ref is None

    def to_object(self, *, agent_name: str) -> Obj:
        """The GitSource object of this source (spec only; the agent writes status)."""
        spec: dict[str, Any] = {"url": self.safe_url}
        if self.ref is not None and self.chart is None:
            spec["ref"] = {str(self.ref.kind): self.ref.name}
        if self.chart is not None:
            spec["chart"] = self.chart.to_spec()
        if self.path:
            spec["path"] = self.path
        spec["interval"] = format_duration(self.interval)
        if self.timeout is not None:
            spec["timeout"] = format_duration(self.timeout)
        if self.health_timeout != DEFAULT_HEALTH_TIMEOUT:
            spec["healthTimeout"] = format_duration(self.health_timeout)
        if self.default_namespace:
            spec["defaultNamespace"] = self.default_namespace
        spec |= {
            "prune": self.prune,
            "allowEmpty": self.allow_empty,
            "adoption": str(self.adoption),
            "suspend": self.suspend,
        }
        if self.prune_budget != DEFAULT_PRUNE_BUDGET:
            spec["pruneBudget"] = self.prune_budget.to_spec()
        if self.ignore_differences:
            spec["ignoreDifferences"] = [_ignore_to_spec(i) for i in self.ignore_differences]
        if self.auth is not None:
            spec["auth"] = _auth_to_spec(self.auth)
        if self.ca_file is not None:
            spec["caFile"] = str(self.ca_file)
        if self.verify is not None:
            spec["verify"] = {"mode": str(self.verify.mode), "keyring": str(self.verify.keyring)}
        spec |= postbuild_to_spec(self.postbuild)
        if self.helm is not None and self.helm.to_spec():
            spec["helm"] = self.helm.to_spec()
        if self.health_checks is not None:
            spec["healthCheckExprs"] = self.health_checks.to_spec()
        if self.interpret:
            spec["interpret"] = sorted(self.interpret)
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {
                "name": self.name,
                "namespace": NAMESPACE,
                "labels": {"app.kubernetes.io/managed-by": "gitkrm", "gitkrm.io/agent": agent_name},
            },
            "spec": spec,
        }


def sync_options(config: SourceConfig, *, agent_name: str, apply_mode: ApplyMode) -> SyncOptions:
    """How the engine syncs `config` (the agent's and `gitkrm diff`'s one spelling)."""
    return SyncOptions(
        source_name=config.name,
        agent_name=agent_name,
        default_namespace=config.default_namespace,
        prune=config.prune,
        allow_empty=config.allow_empty,
        prune_budget=config.prune_budget,
        adoption=config.adoption,
        ignore_differences=config.ignore_differences,
        apply_mode=apply_mode,
        health_timeout=config.health_timeout,
        health_checks=config.health_checks,
        postbuild=config.postbuild,
        helm=config.helm,
        overlay=config.overlay,
        app_source=config.app_source,
        extra_crds=_peer_crds(config.interpret),
    )


def _peer_crds(peers: frozenset[Peer]) -> tuple[str, ...]:
    """The CRDs of the peers a source interprets, as `SyncOptions.extra_crds`."""
    if not peers:
        return ()
    from .tree import registry  # the peers' modules only for a source that names them

    return registry.crd_texts(peers)


def _ignore_to_spec(i: IgnoreDifference) -> dict[str, Any]:
    out: dict[str, Any] = {"group": i.group, "kind": i.kind, "jsonPointers": list(i.json_pointers)}
    if i.name:
        out["name"] = i.name
    if i.namespace:
        out["namespace"] = i.namespace
    return out


def _auth_to_spec(auth: Auth) -> dict[str, Any]:
    if isinstance(auth, SshAuth):
        return {"sshKeyFile": str(auth.key_file), "knownHostsFile": str(auth.known_hosts)}
    out: dict[str, Any] = {"username": auth.username, "bearer": auth.bearer}
    if auth.password.file is not None:
        out["passwordFile"] = str(auth.password.file)
    else:
        out["passwordEnv"] = auth.password.env
    return out


# -- reading GitSource objects ------------------------------------------------------------


def _registry() -> Registry:
    reg = Registry.builtin()
    reg.register_crd(gitsource_crd())
    return reg


def _abs(base: Path, value: str) -> Path:
    p = Path(os.path.expanduser(value))
    return p if p.is_absolute() else (base / p).resolve()


def _ref(spec: Mapping[str, Any]) -> GitRef:
    ref = spec.get("ref") or {}
    return GitRef.from_flags(
        branch=ref.get("branch"),
        tag=ref.get("tag"),
        commit=ref.get("commit"),
        semver=ref.get("semver"),
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
            key_file=_abs(base, auth["sshKeyFile"]), known_hosts=_abs(base, auth["knownHostsFile"])
        )
    if ("passwordFile" in auth) == ("passwordEnv" in auth):
        raise BadRequest("spec.auth: give exactly one of passwordFile and passwordEnv")
    secret = (
        SecretRef(file=_abs(base, auth["passwordFile"]))
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


def resolve_url(url: str, base: Path) -> str:
    """Local paths made absolute against `base`; remote URLs unchanged."""
    if is_remote_url(url):
        return url
    return str(_abs(base, url))


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
        interval=interval,
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
        ca_file=_abs(base, spec["caFile"]) if spec.get("caFile") else None,
        verify=VerifySpec(keyring=_abs(base, spec["verify"]["keyring"]))
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


def from_flags(
    *,
    repo: str,
    branch: str | None,
    tag: str | None,
    commit: str | None,
    path: str | None,
    source_name: str,
    interval: float | None,
    namespace: str | None = None,
    ref: str | None = None,
    semver: str | None = None,
    prune_budget: PruneBudget = DEFAULT_PRUNE_BUDGET,
) -> SourceConfig:
    """The one source the flags describe; a plain directory becomes a development source."""
    check_name(source_name, what="--source-name")
    if namespace is not None:
        check_name(namespace, what="--namespace")
    url = resolve_url(repo, Path.cwd())
    ref_given = any((branch, tag, commit, ref, semver))
    if not is_remote_url(url):
        p = Path(url)
        if not p.exists():
            raise BadRequest(f"--repo {repo}: no such directory (nor a URL git understands)")
        if not p.is_dir():
            raise BadRequest(f"--repo {repo}: not a directory")
        if not is_git_repository(p):
            if ref_given:
                raise BadRequest(
                    f"--repo {repo} is a plain directory, not a Git repository: "
                    "--branch, --tag, --commit, --ref and --semver need one"
                )
            return SourceConfig(
                name=source_name,
                url=url,
                ref=None,
                path=path or "",
                interval=interval or DEFAULT_INTERVAL,
                default_namespace=namespace,
                prune_budget=prune_budget,
            )
    return SourceConfig(
        name=source_name,
        url=url,
        ref=GitRef.from_flags(branch=branch, tag=tag, commit=commit, ref=ref, semver=semver),
        path=path or "",
        interval=interval or DEFAULT_INTERVAL,
        default_namespace=namespace,
        prune_budget=prune_budget,
    )


def parse_interpret(value: str, *, what: str = "--interpret") -> frozenset[Peer]:
    """`flux,argocd`: the peers named (comma-separated); an unknown one is an error."""
    out: set[Peer] = set()
    for word in (w.strip() for w in value.split(",")):
        if not word:
            continue
        try:
            out.add(Peer(word))
        except ValueError:
            known = ", ".join(p.value for p in Peer)
            raise BadRequest(f"{what} {word!r}: not a peer gitkrm interprets ({known})") from None
    return frozenset(out)


def unique_names(configs: Sequence[SourceConfig]) -> None:
    names = [c.name for c in configs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BadRequest(f"source name(s) used twice: {', '.join(dup)}")
