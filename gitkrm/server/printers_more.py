"""Table rows of policy, RBAC, scheduling, storage and networking kinds."""

from __future__ import annotations

from collections.abc import Mapping

from gitkrm.krm import Obj
from gitkrm.server.printing import (
    AGE,
    NAME,
    NONE,
    Column,
    Printer,
    age,
    format_label_selector,
    m,
    name_of,
    num,
)


def _int_or_str(value: object) -> str:
    return "N/A" if value is None else str(value)


def _pdb(pdb: Obj, now: float) -> list[object]:
    return [
        name_of(pdb),
        _int_or_str(m(pdb, "spec", "minAvailable"))
        if m(pdb, "spec", "minAvailable") is not None
        else "N/A",
        _int_or_str(m(pdb, "spec", "maxUnavailable"))
        if m(pdb, "spec", "maxUnavailable") is not None
        else "N/A",
        num(m(pdb, "status", "disruptionsAllowed")),
        age(pdb, now),
    ]


PDB = Printer(
    (
        NAME,
        Column("Min Available", description="The minimum number of pods that must be available."),
        Column(
            "Max Unavailable", description="The maximum number of pods that may be unavailable."
        ),
        Column("Allowed Disruptions", "integer", description="Pods that may be disrupted now."),
        AGE,
    ),
    _pdb,
)


def _subjects(rb: Obj, kind: str) -> str:
    out = []
    for s in rb.get("subjects") or ():
        if isinstance(s, Mapping) and s.get("kind") == kind:
            if kind == "ServiceAccount":
                out.append(f"{s.get('namespace', '')}/{s.get('name', '')}")
            else:
                out.append(str(s.get("name", "")))
    return ", ".join(out)


def _binding(rb: Obj, now: float) -> list[object]:
    raw = rb.get("roleRef")
    ref: Mapping[str, object] = raw if isinstance(raw, Mapping) else {}
    return [
        name_of(rb),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        age(rb, now),
        _subjects(rb, "User"),
        _subjects(rb, "Group"),
        _subjects(rb, "ServiceAccount"),
    ]


BINDING = Printer(
    (
        NAME,
        Column("Role", description="The role of the binding."),
        AGE,
        Column("Users", priority=1, description="Users in the binding."),
        Column("Groups", priority=1, description="Groups in the binding."),
        Column("ServiceAccounts", priority=1, description="Service accounts in the binding."),
    ),
    _binding,
)


def _priority_class(pc: Obj, now: float) -> list[object]:
    return [
        name_of(pc),
        num(pc.get("value")),
        pc.get("globalDefault") is True,
        age(pc, now),
        pc.get("preemptionPolicy") or "PreemptLowerPriority",
    ]


PRIORITY_CLASS = Printer(
    (
        NAME,
        Column("Value", "integer", description="The priority value."),
        Column("Global-Default", "boolean", description="Whether this is the default class."),
        AGE,
        Column("PreemptionPolicy", description="The preemption policy."),
    ),
    _priority_class,
)


def _storage_class(sc: Obj, now: float) -> list[object]:
    name = name_of(sc)
    annotations = m(sc, "metadata", "annotations") or {}
    if annotations.get("storageclass.kubernetes.io/is-default-class") == "true":
        name += " (default)"
    return [
        name,
        sc.get("provisioner") or "",
        sc.get("reclaimPolicy") or "Delete",
        sc.get("volumeBindingMode") or "Immediate",
        sc.get("allowVolumeExpansion") is True,
        age(sc, now),
    ]


STORAGE_CLASS = Printer(
    (
        NAME,
        Column("Provisioner", description="The provisioner."),
        Column("ReclaimPolicy", description="The reclaim policy."),
        Column("VolumeBindingMode", description="When volumes are bound."),
        Column("AllowVolumeExpansion", description="Whether volumes may grow."),
        AGE,
    ),
    _storage_class,
)


def _network_policy(np: Obj, now: float) -> list[object]:
    sel = m(np, "spec", "podSelector")
    shown = format_label_selector(sel)
    return [name_of(np), "<none>" if shown == NONE else shown, age(np, now)]


NETWORK_POLICY = Printer(
    (NAME, Column("Pod-Selector", description="The pods the policy selects."), AGE),
    _network_policy,
)


def _quota(q: Obj, now: float) -> list[object]:
    hard = m(q, "status", "hard") or m(q, "spec", "hard") or {}
    used = m(q, "status", "used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for key in sorted(hard):
        item = f"{key}: {used.get(key, '0')}/{hard[key]}"
        (limits if key.startswith("limits.") else requests).append(item)
    return [name_of(q), age(q, now), ", ".join(requests), ", ".join(limits)]


QUOTA = Printer(
    (
        NAME,
        AGE,
        Column("Request", description="Used and hard request quotas."),
        Column("Limit", description="Used and hard limit quotas."),
    ),
    _quota,
)


def _lease(lease: Obj, now: float) -> list[object]:
    return [name_of(lease), m(lease, "spec", "holderIdentity") or "", age(lease, now)]


LEASE = Printer((NAME, Column("Holder", description="The lease holder."), AGE), _lease)
