"""An Argo CD AppProject's rules for an Application's objects, as plain values (the
agent's configuration holds them in `AppSource.project`; `gitkrm.sync.appproject` applies
them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

IN_CLUSTER_SERVER: Final = "https://kubernetes.default.svc"
IN_CLUSTER_NAME: Final = "in-cluster"


@dataclass(frozen=True, slots=True)
class KindRule:
    """One item of a resource whitelist or blacklist (`name` only on cluster lists)."""

    group: str
    kind: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class DestinationRule:
    """One item of `destinations`."""

    server: str = ""
    name: str = ""
    namespace: str = ""


@dataclass(frozen=True, slots=True)
class ProjectPolicy:
    """What an AppProject lets an Application's objects be (see the module docstring)."""

    project: str
    destinations: tuple[DestinationRule, ...] = ()
    cluster_whitelist: tuple[KindRule, ...] = ()
    cluster_blacklist: tuple[KindRule, ...] = ()
    namespace_whitelist: tuple[KindRule, ...] | None = None  # None: every kind
    namespace_blacklist: tuple[KindRule, ...] = ()
    only_project_clusters: bool = False
    """`permitOnlyProjectScopedClusters`: gitkrm's own target is no project's cluster."""


PERMISSIVE: Final = ProjectPolicy(
    project="default",
    destinations=(DestinationRule(server="*", namespace="*"),),
    cluster_whitelist=(KindRule(group="*", kind="*"),),
)
"""The `default` project as Argo CD creates it: everything permitted."""
