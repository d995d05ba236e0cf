"""Sort keys of the apply order (see `order`): phase, wave, Helm's kind order, namespace, name.

Helm's `InstallOrder` (pkg/releaseutil/kind_sorter.go); kinds it doesn't list go last,
alphabetically. Namespaces and CRDs form a phase of their own before every wave.
"""

from __future__ import annotations

from typing import Final

from gitkrm.krm import ObjectRef

INSTALL_ORDER: Final = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
)
_RANK: Final = {k: i for i, k in enumerate(INSTALL_ORDER)}
_UNKNOWN: Final = len(INSTALL_ORDER)

SortKey = tuple[int, int, int, str, str, str]


def first_phase(ref: ObjectRef) -> bool:
    """Namespaces and CRDs go before every wave."""
    return (ref.group == "" and ref.kind == "Namespace") or (
        ref.group == "apiextensions.k8s.io" and ref.kind == "CustomResourceDefinition"
    )


def sort_key(ref: ObjectRef, wave: int) -> SortKey:
    """The sort key; its first two items are the stage (see `stage_of`)."""
    rank = _RANK.get(ref.kind, _UNKNOWN)
    first = first_phase(ref)
    return (
        0 if first else 1,
        0 if first else wave,
        rank,
        ref.kind if rank == _UNKNOWN else "",
        ref.namespace or "",
        ref.name,
    )


def stage_of(ref: ObjectRef, wave: int) -> tuple[int, int]:
    """The (phase, wave) group an object is applied in; groups go in ascending order."""
    return (0, 0) if first_phase(ref) else (1, wave)
