"""ValidatingAdmissionPolicies over a planned revision, before anything is written.

The store enforces policies on every write; a sync checks them first, over every object it
would create or change, so a revision a policy denies is refused whole (each denied object
named with file, line and the policy's message) instead of being half applied. The policies
are the store's with the revision's own policies and bindings in place of theirs (a revision
that adds a policy is checked against it, as its objects will be once it is applied).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gitkrm.errors import GitkrmError
from gitkrm.krm import GVK, Obj
from gitkrm.schema import Registry
from gitkrm.schema.cel import policy as vap
from gitkrm.schema.cel.lookup import ParamQuery
from gitkrm.store import Store
from gitkrm.sync import keys, live
from gitkrm.sync.desired import Desired
from gitkrm.sync.plan import Plan
from gitkrm.sync.problems import Problem, describe_ref
from gitkrm.sync.steps import Op

_POLICY = GVK(group=vap.GROUP, version="v1", kind=vap.POLICY_KIND)
_BINDING = GVK(group=vap.GROUP, version="v1", kind=vap.BINDING_KIND)


async def denied(
    store: Store, plan: Plan, registry: Registry, desired: Sequence[Desired]
) -> list[Problem]:
    """The objects of `plan` a policy denies (empty when none, or no policy is bound)."""
    own = _decoded(desired, lambda g, k: g == vap.GROUP and k in _POLICY_KINDS)
    policies = await _merged(store, _POLICY, own)
    bindings = await _merged(store, _BINDING, own)
    if not policies or not bindings:
        return []
    policy_set = vap.PolicySet.of(policies, bindings)
    steps = [
        s
        for s in plan.steps
        if s.op in (Op.CREATE, Op.PATCH)
        and s.desired is not None
        and policy_set.may_match(s.ref.group)
    ]
    if not steps:
        return []
    lookup = await _MemoryLookup.load(store, policies, desired)
    problems: list[Problem] = []
    for step in steps:
        d = step.desired
        assert d is not None
        gvk = GVK.from_api_version(d.api_version, d.ref.kind)
        try:
            plural = registry.info(gvk).plural
        except GitkrmError:
            continue
        obj = step.after if step.after is not None else d.obj
        request = vap.Request(
            operation="CREATE" if step.live is None else "UPDATE",
            group=gvk.group,
            version=gvk.version,
            kind=gvk.kind,
            resource=plural,
            subresource="",
            namespace=d.ref.namespace or "",
            name=d.ref.name,
            obj=obj,
            old=step.live,
        )
        decision = policy_set.admit(request, lookup)
        if decision.denials:
            problems.append(
                Problem(d.path, d.line or None, describe_ref(d.ref), decision.denials[0].text())
            )
    return problems


_POLICY_KINDS = (vap.POLICY_KIND, vap.BINDING_KIND)


def _kind_is(gvk: GVK) -> Callable[[str, str], bool]:
    return lambda group, kind: (group, kind) == (gvk.group, gvk.kind)


def _decoded(desired: Sequence[Desired], wanted: Callable[[str, str], bool]) -> list[Obj]:
    """The revision's objects of some kinds (only those decoded: a revision holds 10,000)."""
    return [d.obj for d in desired if wanted(d.ref.group, d.ref.kind)]


async def _merged(store: Store, gvk: GVK, own: list[Obj]) -> list[Obj]:
    """The store's objects of a kind, the revision's replacing those of the same name."""
    mine = {_name(o): o for o in own if o.get("kind") == gvk.kind}
    try:
        stored = await live.list_all(store, gvk)
    except GitkrmError:  # not served, or not allowed to list (a cluster's RBAC)
        stored = []
    merged = {_name(o): o for o in stored}
    merged.update(mine)
    return list(merged.values())


def _name(obj: Mapping[str, Any]) -> str:
    return str(keys.metadata(obj).get("name") or "")


class _MemoryLookup:
    """Namespaces and params read once for the whole revision (store and revision)."""

    def __init__(self, namespaces: dict[str, Obj], params: dict[tuple[str, str], list[Obj]]):
        self._namespaces = namespaces
        self._params = params

    @classmethod
    async def load(
        cls, store: Store, policies: list[Obj], desired: Sequence[Desired]
    ) -> _MemoryLookup:
        namespaces = {_name(o): o for o in await live.list_all(store, live.NAMESPACE)}
        own = _decoded(desired, lambda g, k: g == "" and k == "Namespace")
        namespaces.update({_name(o): o for o in own})
        params: dict[tuple[str, str], list[Obj]] = {}
        for policy in policies:
            pk = (policy.get("spec") or {}).get("paramKind")
            if not isinstance(pk, dict):
                continue
            key = (str(pk.get("apiVersion", "")), str(pk.get("kind", "")))
            if key in params:
                continue
            gvk = GVK.from_api_version(*key)
            try:
                stored = await live.list_all(store, gvk)
            except GitkrmError:
                stored = []
            found = {(_ns(o), _name(o)): o for o in stored}
            own = _decoded(desired, _kind_is(gvk))
            found.update({(_ns(o), _name(o)): o for o in own})
            params[key] = list(found.values())
        return cls(namespaces, params)

    def namespace(self, name: str) -> Mapping[str, Any] | None:
        return self._namespaces.get(name)

    def params(self, query: ParamQuery, /) -> list[Mapping[str, Any]]:
        candidates = self._params.get((query.api_version, query.kind), [])
        return query.choose(o for o in candidates if _ns(o) in (query.namespace, ""))


def _ns(obj: Mapping[str, Any]) -> str:
    return str(keys.metadata(obj).get("namespace") or "")
