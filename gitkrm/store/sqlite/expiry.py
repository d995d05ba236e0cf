"""Event expiry: kube-apiserver's `--event-ttl` (an etcd lease on every Event write).

An Event (core/v1 or events.k8s.io/v1) expires `ttl` seconds after it was last observed:
its series' lastObservedTime, else lastTimestamp, else eventTime, else its creation time,
read by SQLite's JSON functions without decoding the objects in Python. Beyond `limit`
Events the oldest go too, so a long-lived agent's store does not grow (the API server has
no such bound; etcd's quota plays that part there). Expired Events are deleted in one
transaction, so watchers see them go as on a cluster.
"""

from __future__ import annotations

from gitkrm.krm import ObjectRef
from gitkrm.krm.clock import parse_timestamp
from gitkrm.store.sqlite import deletion
from gitkrm.store.sqlite.txn import Txn

EVENT_KINDS = (("", "Event", "v1"), ("events.k8s.io", "Event", "v1"))

_OBSERVED = (
    "coalesce(json_extract(d, '$.series.lastObservedTime'), json_extract(d, '$.lastTimestamp'),"
    " json_extract(d, '$.deprecatedLastTimestamp'), json_extract(d, '$.eventTime'),"
    " json_extract(d, '$.metadata.creationTimestamp'))"
)
_SELECT = (
    f"SELECT ns, name, {_OBSERVED} FROM (SELECT ns, name, CAST(data AS TEXT) AS d"
    " FROM objects WHERE gk = ?)"
)


def expired_events(
    txn: Txn, *, now: float, ttl: float, limit: int
) -> list[tuple[tuple[str, str, str], str, str]]:
    """The Events to delete, as ((group, kind, version), namespace, name): the expired
    ones, then the oldest of the rest beyond `limit`."""
    rows: list[tuple[float, tuple[str, str, str], str, str]] = []
    for group, kind, version in EVENT_KINDS:
        for ns, name, observed in txn.conn.execute(_SELECT, (f"{group}/{kind}",)):
            when = parse_timestamp(observed)
            rows.append((when if when is not None else 0.0, (group, kind, version), ns, name))
    cutoff = now - ttl
    gone = [r for r in rows if r[0] <= cutoff]
    kept = len(rows) - len(gone)
    if kept > limit:
        rest = sorted((r for r in rows if r[0] > cutoff), key=lambda r: r[0])
        gone += rest[: kept - limit]
    return [(gvk, ns, name) for _, gvk, ns, name in gone]


def expire(txn: Txn, *, now: float, ttl: float, limit: int) -> int:
    """Delete the Events `expired_events` names; returns how many went."""
    doomed = expired_events(txn, now=now, ttl=ttl, limit=limit)
    for (group, kind, version), ns, name in doomed:
        ref = ObjectRef(group=group, kind=kind, name=name, namespace=ns or None, version=version)
        deletion.delete(txn, ref, propagation=None, preconditions=None)
    return len(doomed)
