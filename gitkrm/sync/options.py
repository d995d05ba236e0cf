"""How one source syncs: the options the agent passes to the SyncEngine."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Literal

from gitkrm.charts.spec import HelmSpec
from gitkrm.errors import BadRequest
from gitkrm.health.expressions import HealthChecks
from gitkrm.krm.names import is_dns1123_label
from gitkrm.sync import keys
from gitkrm.sync.appsource_spec import AppSource
from gitkrm.sync.overlay_spec import Overlay
from gitkrm.sync.postbuild_spec import PostBuildSpec


class AdoptionPolicy(StrEnum):
    """What to do with an existing object the source does not own (cli-utils'
    inventory policies). An object owned by another gitkrm source is always refused.

    - never: refuse it (the default);
    - if-unowned: adopt it when no tool claims it (no gitkrm source label and no
      `app.kubernetes.io/managed-by` of another manager, e.g. Helm);
    - always: adopt it even when another tool's managed-by label is on it.
    """

    NEVER = "never"
    IF_UNOWNED = "if-unowned"
    ALWAYS = "always"


@dataclass(frozen=True)
class IgnoreDifference:
    """JSON pointers (RFC 6901) of fields of one kind that are neither reported as drift
    nor set back, e.g. a Deployment's `/spec/replicas` owned by an autoscaler. `name` and
    `namespace` narrow it to one object."""

    group: str
    kind: str
    json_pointers: tuple[str, ...]
    name: str | None = None
    namespace: str | None = None

    def __post_init__(self) -> None:
        for p in self.json_pointers:
            if not p.startswith("/"):
                raise BadRequest(f"ignoreDifferences pointer {p!r} must start with '/'")

    def matches(self, *, group: str, kind: str, name: str, namespace: str | None) -> bool:
        return (
            self.group == group
            and self.kind == kind
            and (self.name is None or self.name == name)
            and (self.namespace is None or self.namespace == (namespace or ""))
        )


@dataclass(frozen=True, slots=True)
class PruneBudget:
    """GitSource `spec.pruneBudget` (`sync.guards`): a revision may prune `count` objects,
    or `percent` % of the inventory, whichever is more. The default (10 objects or 25%)
    stops the deletion of an application by mistake while routine changes pass."""

    count: int = 10
    percent: int = 25

    def __post_init__(self) -> None:
        if self.count < 0 or not 0 <= self.percent <= 100:
            raise BadRequest(
                f"pruneBudget: count must be 0 or more and percent 0 to 100 "
                f"(got count {self.count}, percent {self.percent})"
            )

    def limit(self, inventory: int) -> int:
        """The most prunes a revision may make when the inventory holds `inventory` keys."""
        return max(self.count, self.percent * inventory // 100)

    def to_spec(self) -> dict[str, int]:
        return {"count": self.count, "percent": self.percent}


DEFAULT_PRUNE_BUDGET: Final = PruneBudget()


DEFAULT_HEALTH_TIMEOUT: Final = 300.0
"""`spec.healthTimeout`'s default (5m): how long a wave, a hook or a prune wave may take."""

ApplyMode = Literal["client-side", "server-side"]
APPLY_MODES: Final = ("client-side", "server-side")


@dataclass(frozen=True)
class SyncOptions:
    """One source's sync settings. `default_namespace` None means `default`, as kubectl.

    `apply_mode`: client-side is kubectl's three-way patch with the last-applied annotation;
    server-side is a forced server-side apply by the field manager `gitkrm` (see
    `serverside`)."""

    source_name: str
    agent_name: str
    default_namespace: str | None = None
    prune: bool = True
    allow_empty: bool = False
    adoption: AdoptionPolicy = AdoptionPolicy.NEVER
    ignore_differences: tuple[IgnoreDifference, ...] = ()
    apply_mode: ApplyMode = "client-side"
    helm: HelmSpec | None = None  # how the source's Helm charts render (None: defaults)
    kube_version: str | None = None  # the target's, for charts (None: the embedded one's)
    postbuild: PostBuildSpec | None = None  # substitution and decryption (`postbuild`)
    health_timeout: float = DEFAULT_HEALTH_TIMEOUT  # seconds a wave or a hook may take
    deadline: float | None = None
    """A `time.monotonic()` by which every wait of the sync ends, whatever `health_timeout`
    says: `run --once --wait --timeout` bounds the whole run (`gates.budget`)."""
    health_checks: HealthChecks | None = None  # spec.healthCheckExprs, for waves and hooks
    overlay: Overlay | None = None  # kustomize transforms over the render (`overlay`)
    app_source: AppSource | None = None  # Argo CD's path rules (an interpreted Application)
    extra_crds: tuple[str, ...] = ()
    """CRDs (JSON) the source's objects may use though the target lacks them: the peers'
    CRDs under `--interpret`, which the agent registers but `gitkrm diff` and `plan` (that
    write nothing) cannot. The render knows those the store has no CRD of that name for."""
    extra_namespaces: tuple[str, ...] = ()
    """Namespaces the source's objects may live in though the target lacks them: the
    peers' own (`argocd`, `flux-system`) under `--interpret`, which the agent makes as it
    registers their CRDs, and `gitkrm plan` and `diff` (read-only) do not."""
    prune_budget: PruneBudget = DEFAULT_PRUNE_BUDGET  # spec.pruneBudget (sync.guards)

    def __post_init__(self) -> None:
        for what, value in (("source name", self.source_name), ("agent name", self.agent_name)):
            errs = is_dns1123_label(value)
            if errs:
                raise BadRequest(f"invalid {what} {value!r}: {'; '.join(errs)}")
        if self.apply_mode not in APPLY_MODES:
            raise BadRequest(
                f"invalid apply mode {self.apply_mode!r}: use client-side or server-side"
            )

    @property
    def namespace(self) -> str:
        return self.default_namespace or "default"

    @property
    def inventory_id(self) -> str:
        """The cli-utils inventory id: `<agent>.<source>` (`keys.inventory_id`)."""
        return keys.inventory_id(agent=self.agent_name, source=self.source_name)

    @property
    def server_side(self) -> bool:
        return self.apply_mode == "server-side"
