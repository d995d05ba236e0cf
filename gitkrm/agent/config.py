"""What the agent syncs: one source's configuration (`SourceConfig`), and its other shapes.

A source's configuration and its GitSource object are the same thing in two shapes:
`config_read.from_object` reads a GitSource (from a file or the store), `to_object` writes
one, and `sync_options` is what the sync engine takes from it. Sources come from flags
(`config_flags`) or a `--config` file of GitSource objects (`config_read`). Paths in a file
are relative to the file; they are stored absolute, so the stored object means the same
whoever reads it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gitkrm.charts.spec import ChartRef, HelmSpec
from gitkrm.errors import BadRequest
from gitkrm.health.expressions import HealthChecks
from gitkrm.krm import Obj
from gitkrm.krm.names import is_dns1123_label
from gitkrm.source import Auth, GitRef, RefKind, SshAuth, VerifySpec
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

from .crd import API_VERSION, KIND, NAMESPACE
from .duration import format_duration
from .postbuild_config import to_spec as postbuild_to_spec
from .tree.model import Peer

if TYPE_CHECKING:
    from gitkrm.source.artifact_copy import ArtifactRecipe
    from gitkrm.source.oci_source import OciArtifact

    from .tree.argocd_appset import GeneratedApplications
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
    ignore: str | None = None
    """`spec.ignore`: .sourceignore lines of the source's own, after the repository's root
    ignore file (Flux's GitRepository `spec.ignore`)."""
    interval: float = DEFAULT_INTERVAL
    retry_interval: float | None = None
    """After a failed sync, the next one this soon (`spec.retryInterval`, Flux's); None: at
    `interval`."""
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
    generator: GeneratedArtifacts | GeneratedApplications | None = None
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
            spec["ref"] = {self.ref.spec_field: self.ref.name}
        if self.chart is not None:
            spec["chart"] = self.chart.to_spec()
        if self.path:
            spec["path"] = self.path
        if self.ignore is not None:
            spec["ignore"] = self.ignore
        spec["interval"] = format_duration(self.interval)
        if self.retry_interval is not None:
            spec["retryInterval"] = format_duration(self.retry_interval)
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
        extra_namespaces=_peer_namespaces(config.interpret),
    )


def _peer_namespaces(peers: frozenset[Peer]) -> tuple[str, ...]:
    """The namespaces of the peers a source interprets (`SyncOptions.extra_namespaces`)."""
    if not peers:
        return ()
    from .tree.peerns import NAMESPACES

    return tuple(sorted(NAMESPACES[p] for p in peers if p in NAMESPACES))


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


def abs_path(base: Path, value: str) -> Path:
    """`value` (`~` expanded) made absolute against `base`."""
    p = Path(os.path.expanduser(value))
    return p if p.is_absolute() else (base / p).resolve()


def resolve_url(url: str, base: Path) -> str:
    """Local paths made absolute against `base`; remote URLs unchanged."""
    if is_remote_url(url):
        return url
    return str(abs_path(base, url))


def unique_names(configs: Sequence[SourceConfig]) -> None:
    """Every source has a name of its own (they name GitSource objects and caches)."""
    names = [c.name for c in configs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BadRequest(f"source name(s) used twice: {', '.join(dup)}")
