"""The Pod admission plugins (gitkrm.schema.pod_admission) on a create in the store: the
PriorityClasses they need are read inside the write's transaction."""

from __future__ import annotations

import orjson

from gitkrm.errors import Forbidden
from gitkrm.krm import Obj
from gitkrm.schema.pod_admission import (
    NO_CLASS,
    SYSTEM_PRIORITY_CLASSES,
    TOKEN_VOLUME_PREFIX,
    Priority,
    admit_pod_create,
    priority_of,
)
from gitkrm.store.sqlite.kinds import gk_key
from gitkrm.store.sqlite.meta import generate_name
from gitkrm.store.sqlite.txn import Txn

_PRIORITY_CLASS = gk_key("scheduling.k8s.io", "PriorityClass")


def admit_pod(txn: Txn, pod: Obj) -> None:
    """Mutate a Pod being created as kube-apiserver's default admission plugins do."""
    name = (pod.get("metadata") or {}).get("name") or ""

    def priority(class_name: str) -> Priority | None:
        if class_name:
            row = txn.conn.execute(
                "SELECT data FROM objects WHERE gk = ? AND ns = '' AND name = ?",
                (_PRIORITY_CLASS, class_name),
            ).fetchone()
            if row is not None:
                return priority_of(orjson.loads(row[0]))
            value = SYSTEM_PRIORITY_CLASSES.get(class_name)
            if value is None:
                return None  # unknown: left as it is (kube-apiserver refuses it)
            return Priority(
                class_name=class_name, value=value, preemption_policy="PreemptLowerPriority"
            )
        # A global default class (the lowest valued one when several claim it), else none.
        found = [
            priority_of(pc)
            for (data,) in txn.conn.execute(
                "SELECT data FROM objects WHERE gk = ?", (_PRIORITY_CLASS,)
            )
            if (pc := orjson.loads(data)).get("globalDefault") is True
        ]
        return min(found, key=lambda p: p.value) if found else NO_CLASS

    try:
        admit_pod_create(
            pod, priority=priority, volume_name=lambda: generate_name(TOKEN_VOLUME_PREFIX)
        )
    except Forbidden as e:
        raise Forbidden(f'pods "{name}" is forbidden: {e.message}') from None
