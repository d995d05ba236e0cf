"""LimitRanger and ResourceQuota admission on the SQLite store's writes
(gitkrm.schema.limitranger, gitkrm.schema.quota), inside the write's transaction.

Only namespaces holding a LimitRange or a ResourceQuota pay anything: the store keeps the
set of those namespaces (read again after one of them is created or deleted), and a write
elsewhere costs one set lookup. Where they apply, a Pod is defaulted and bounded by the
LimitRanges, a PersistentVolumeClaim bounded, and every write the quotas track is charged
to them: their `status.used` grows in the same transaction (so the next pod of a batch sees
it), as the quota admission plugin writes it before the object is stored; the
resource-quota controller recounts it from the objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from gitkrm.errors import Forbidden
from gitkrm.krm import Obj
from gitkrm.schema import limitranger, quota
from gitkrm.schema.podspec_defaults import pod_qos_class
from gitkrm.store.sqlite.kinds import Kind, gk_key

if TYPE_CHECKING:
    from gitkrm.store.sqlite.txn import Txn

LIMIT_RANGE_GK = gk_key("", "LimitRange")
QUOTA_GK = gk_key("", "ResourceQuota")
_UPDATE_CHARGED = (gk_key("", "Service"), gk_key("", "PersistentVolumeClaim"))
_CLAIM_GK = gk_key("", "PersistentVolumeClaim")


class Constrained:
    """The namespaces that hold a LimitRange or a ResourceQuota (None: to be read)."""

    __slots__ = ("namespaces",)

    def __init__(self) -> None:
        self.namespaces: frozenset[str] | None = None

    def reset(self) -> None:
        self.namespaces = None

    def of(self, txn: Txn) -> frozenset[str]:
        if self.namespaces is None:
            rows = txn.conn.execute(
                "SELECT DISTINCT ns FROM objects WHERE gk IN (?, ?)", (LIMIT_RANGE_GK, QUOTA_GK)
            ).fetchall()
            self.namespaces = frozenset(r[0] for r in rows)
        return self.namespaces


def _objects(txn: Txn, gk: str, ns: str) -> list[Obj]:
    rows = txn.conn.execute(
        "SELECT data FROM objects WHERE gk = ? AND ns = ? ORDER BY name", (gk, ns)
    ).fetchall()
    return [orjson.loads(r[0]) for r in rows]


def _forbidden(kind: Kind, obj: Obj, message: str) -> Forbidden:
    name = (obj.get("metadata") or {}).get("name") or ""
    return Forbidden(f'{kind.resource} "{name}" is forbidden: {message}')


def admit_create(txn: Txn, kind: Kind, obj: Obj, ns: str) -> bool:
    """The plugins on a create in a constrained namespace (`ns`); True when the LimitRanger
    changed the object (the caller validates it again, as kube-apiserver validates after
    the mutating plugins)."""
    changed = False
    if kind.is_pod or kind.key == _CLAIM_GK:
        ranges = _objects(txn, LIMIT_RANGE_GK, ns)
        if ranges and kind.is_pod:
            changed = limitranger.default_pod(obj, ranges)
            if changed and isinstance(spec := obj.get("spec"), dict):
                status = obj.get("status")
                if isinstance(status, dict):
                    status["qosClass"] = pod_qos_class(spec)
            message = limitranger.check_pod(obj, ranges)
        elif ranges:
            message = limitranger.check_claim(obj, ranges)
        else:
            message = None
        if message is not None:
            raise _forbidden(kind, obj, message)
    _charge(txn, kind, obj, ns, old=None)
    return changed


def admit_update(txn: Txn, kind: Kind, obj: Obj, old: Obj, ns: str) -> None:
    """An update of a Service or a claim in a constrained namespace: a claim is bounded by
    the LimitRanges again, and what the update adds is charged (a Service becoming a
    LoadBalancer, a claim growing)."""
    if kind.key not in _UPDATE_CHARGED:
        return
    if kind.key == _CLAIM_GK and not (old.get("metadata") or {}).get("deletionTimestamp"):
        ranges = _objects(txn, LIMIT_RANGE_GK, ns)
        message = limitranger.check_claim(obj, ranges) if ranges else None
        if message is not None:
            raise _forbidden(kind, obj, message)
    _charge(txn, kind, obj, ns, old=old)


def _charge(txn: Txn, kind: Kind, obj: Obj, ns: str, *, old: Obj | None) -> None:
    quotas = _objects(txn, QUOTA_GK, ns)
    if not quotas:
        return
    subject = quota.Subject(kind.group, kind.kind, kind.info.plural)
    try:
        charged = quota.charge(quotas, subject, obj, old)
    except Forbidden as e:
        raise _forbidden(kind, obj, e.message) from None
    if txn.dry_run or not charged:
        return  # a dry run is not charged
    quota_kind = txn.core.kinds.of("", "ResourceQuota")
    for q, used in charged:
        name = q["metadata"]["name"]
        stored = txn.load(quota_kind, ns, name)
        new = {**stored.obj, "status": {**(stored.obj.get("status") or {}), "used": used}}
        new["metadata"] = dict(stored.obj["metadata"])
        txn.put(quota_kind, ns, name, new, old=stored)
