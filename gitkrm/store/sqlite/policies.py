"""ValidatingAdmissionPolicies enforced on every write of the SQLite store.

The store keeps the compiled `PolicySet` of its stored policies and bindings, rebuilt inside
the first write after one of them changed (so a policy written in a batch applies to the
batch's later objects, as the sync's all-or-nothing admission expects), and reads params and
namespaces through the write's own transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from gitkrm.errors import GitkrmError
from gitkrm.krm import Obj
from gitkrm.schema.cel import policy as vap
from gitkrm.schema.cel.lookup import ParamQuery
from gitkrm.store.sqlite.kinds import Kind, gk_key

if TYPE_CHECKING:
    from gitkrm.store.sqlite.txn import Txn

POLICY_GK = gk_key(vap.GROUP, vap.POLICY_KIND)
BINDING_GK = gk_key(vap.GROUP, vap.BINDING_KIND)


class Policies:
    """The store's policy set, dirty until first read and after each policy write."""

    def __init__(self) -> None:
        self.dirty = True
        self._set: vap.PolicySet | None = None
        # Namespaces policies read (namespaceObject, namespaceSelector), decoded once.
        self.namespaces: dict[str, Mapping[str, Any] | None] = {}

    def touched(self, kind: Kind) -> None:
        if kind.key in (POLICY_GK, BINDING_GK):
            self.dirty = True
        elif kind.is_namespace:
            self.namespaces.clear()

    def reset(self) -> None:
        """After a rollback: read everything again."""
        self.dirty = True
        self.namespaces.clear()

    def current(self, txn: Txn) -> vap.PolicySet | None:
        if self.dirty:
            rows = txn.conn.execute(
                "SELECT gk, data FROM objects WHERE gk IN (?, ?)", (POLICY_GK, BINDING_GK)
            ).fetchall()
            policies = [orjson.loads(d) for gk, d in rows if gk == POLICY_GK]
            bindings = [orjson.loads(d) for gk, d in rows if gk == BINDING_GK]
            self._set = vap.PolicySet.of(policies, bindings) if policies and bindings else None
            self.dirty = False
        return self._set


class _Lookup:
    """Params and namespaces as the write's transaction sees them."""

    def __init__(self, txn: Txn) -> None:
        self._txn = txn

    def namespace(self, name: str) -> Mapping[str, Any] | None:
        cached = self._txn.core.policies.namespaces
        if name in cached:
            return cached[name]
        row = self._txn.conn.execute(
            "SELECT data FROM objects WHERE gk = '/Namespace' AND ns = '' AND name = ?", (name,)
        ).fetchone()
        found = cached[name] = orjson.loads(row[0]) if row is not None else None
        return found

    def params(self, query: ParamQuery, /) -> list[Mapping[str, Any]]:
        try:
            found = self._txn.core.kinds.of_type(query.api_version, query.kind)[1]
        except GitkrmError:  # an unserved param kind finds no params
            return []
        gk = gk_key(query.group, query.kind)
        ns = query.namespace if found.namespaced else ""
        if query.name:
            row = self._txn.conn.execute(
                "SELECT data FROM objects WHERE gk = ? AND ns = ? AND name = ?",
                (gk, ns, query.name),
            ).fetchone()
            return [orjson.loads(row[0])] if row is not None else []
        rows = self._txn.conn.execute(
            "SELECT data FROM objects WHERE gk = ? AND ns = ?", (gk, ns)
        ).fetchall()
        return query.choose(orjson.loads(r[0]) for r in rows)


def admit(
    txn: Txn,
    kind: Kind,
    obj: Obj | None,
    *,
    old: Obj | None,
    subresource: str | None,
    dry_run: bool,
) -> list[str]:
    """Run the matching policies on a write: raise the first denial, return warnings."""
    policies = txn.core.policies.current(txn)
    if policies is None or not policies.may_match(kind.group):
        return []
    subject = obj if obj is not None else old
    assert subject is not None
    md = subject.get("metadata") or {}
    api_version = str(subject.get("apiVersion", ""))
    request = vap.Request(
        operation="DELETE" if obj is None else ("CREATE" if old is None else "UPDATE"),
        group=kind.group,
        version=api_version.rsplit("/", 1)[-1],
        kind=kind.kind,
        resource=kind.resource.split(".", 1)[0],
        subresource=subresource or "",
        namespace=str(md.get("namespace") or ""),
        name=str(md.get("name") or ""),
        obj=obj,
        old=old,
        dry_run=dry_run,
    )
    decision = policies.admit(request, _Lookup(txn))
    if decision.denials:
        raise decision.denials[0].error(request)
    return decision.warnings
