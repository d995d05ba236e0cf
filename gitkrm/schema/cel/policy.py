"""ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1)
evaluated as kube-apiserver's validating admission policy plugin does.

`PolicySet.of(policies, bindings)` compiles every expression once (programs are cached by
source in `runtime`); `PolicySet.admit(request, lookup)` matches each binding's policy against
the request (matchConstraints, the binding's matchResources, matchConditions), reads params
through `lookup` and returns the decision: the first denial (raised by the caller as kube's
422 Invalid with `ValidatingAdmissionPolicy '<p>' with binding '<b>' denied request: <msg>`),
warnings (`Warn`) and audit annotations (`Audit`). Pure: the caller supplies every read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gitkrm.errors import (
    Cause,
    Details,
    Forbidden,
    GitkrmError,
    Invalid,
    RequestEntityTooLarge,
    Unauthorized,
)
from gitkrm.krm.labels import label_selector_from_dict
from gitkrm.schema.cel.lookup import Lookup, ParamQuery

_VARS = frozenset({"object", "oldObject", "request", "params", "namespaceObject", "variables"})
POLICY_KIND = "ValidatingAdmissionPolicy"
BINDING_KIND = "ValidatingAdmissionPolicyBinding"
GROUP = "admissionregistration.k8s.io"


@dataclass(frozen=True, slots=True)
class Request:
    """One write as admission sees it (kube's admission.Attributes)."""

    operation: str  # CREATE, UPDATE, DELETE
    group: str
    version: str
    kind: str
    resource: str  # plural
    subresource: str
    namespace: str
    name: str
    obj: Mapping[str, Any] | None
    old: Mapping[str, Any] | None
    username: str = ""
    dry_run: bool = False

    def as_cel(self) -> dict[str, Any]:
        return {
            "kind": {"group": self.group, "version": self.version, "kind": self.kind},
            "resource": {"group": self.group, "version": self.version, "resource": self.resource},
            "subResource": self.subresource,
            "requestKind": {"group": self.group, "version": self.version, "kind": self.kind},
            "requestResource": {
                "group": self.group,
                "version": self.version,
                "resource": self.resource,
            },
            "name": self.name,
            "namespace": self.namespace,
            "operation": self.operation,
            "userInfo": {"username": self.username},
            "dryRun": self.dry_run,
        }


@dataclass(frozen=True, slots=True)
class Denial:
    policy: str
    binding: str
    message: str
    reason: str  # Invalid (default), Forbidden, Unauthorized, RequestEntityTooLarge

    def text(self) -> str:
        return (
            f"ValidatingAdmissionPolicy '{self.policy}' with binding '{self.binding}' "
            f"denied request: {self.message}"
        )

    def error(self, request: Request) -> GitkrmError:
        """kube's denial: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy
        ...`, 422 Invalid unless the validation names another reason."""
        cls = _REASONS.get(self.reason, Invalid)
        resource = f"{request.resource}.{request.group}" if request.group else request.resource
        text = self.text()
        return cls(
            f'{resource} "{request.name}" is forbidden: {text}',
            details=Details(
                name=request.name,
                group=request.group,
                kind=request.resource,
                causes=(Cause(type="", message=text),),
            ),
        )


_REASONS: dict[str, type[GitkrmError]] = {
    "Invalid": Invalid,
    "Forbidden": Forbidden,
    "Unauthorized": Unauthorized,
    "RequestEntityTooLarge": RequestEntityTooLarge,
}


@dataclass(slots=True)
class Decision:
    denials: list[Denial] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    audit: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Expr:
    source: str
    program: Any  # runtime.Program | None (compile error in `error`)
    error: str = ""

    def evaluate(self, data: Mapping[str, Any]) -> Any:
        from gitkrm.schema.cel.runtime import CelError

        if self.program is None:
            raise CelError(self.error)
        return self.program.evaluate(data)


def _expr(source: str) -> _Expr:
    from gitkrm.schema.cel.runtime import CelError, compile_expression

    try:
        return _Expr(source, compile_expression(source, _VARS))
    except CelError as e:
        return _Expr(source, None, f"compilation failed: {e}")


@dataclass(frozen=True, slots=True)
class _Validation:
    expression: _Expr
    message: str
    message_expression: _Expr | None
    reason: str


@dataclass(frozen=True, slots=True)
class _Policy:
    name: str
    spec: Mapping[str, Any]
    fail_closed: bool
    param_kind: tuple[str, str] | None
    conditions: tuple[tuple[str, _Expr], ...]
    variables: tuple[tuple[str, _Expr], ...]
    validations: tuple[_Validation, ...]
    audits: tuple[tuple[str, _Expr], ...]
    passes: _Expr | None  # one program: the policy lets the request through (fast path)


def _named(items: object) -> tuple[tuple[str, _Expr], ...]:
    """matchConditions and variables: (name, compiled expression)."""
    listed = items if isinstance(items, list) else []
    return tuple(
        (str(c.get("name", "")), _expr(str(c.get("expression", ""))))
        for c in listed
        if isinstance(c, dict)
    )


def _compile_policy(obj: Mapping[str, Any]) -> _Policy:
    spec = obj.get("spec") or {}
    pk = spec.get("paramKind")
    validations = tuple(
        _Validation(
            expression=_expr(str(v.get("expression", ""))),
            message=str(v.get("message") or ""),
            message_expression=_expr(v["messageExpression"])
            if v.get("messageExpression")
            else None,
            reason=str(v.get("reason") or ""),
        )
        for v in spec.get("validations") or ()
        if isinstance(v, dict)
    )
    conditions = _named(spec.get("matchConditions"))
    variables = _named(spec.get("variables"))
    return _Policy(
        name=str((obj.get("metadata") or {}).get("name", "")),
        spec=spec,
        fail_closed=spec.get("failurePolicy", "Fail") != "Ignore",
        param_kind=(str(pk.get("apiVersion", "")), str(pk.get("kind", "")))
        if isinstance(pk, dict)
        else None,
        conditions=conditions,
        variables=variables,
        validations=validations,
        passes=_fast_path(conditions, variables, validations),
        audits=tuple(
            (str(a.get("key", "")), _expr(str(a.get("valueExpression", ""))))
            for a in spec.get("auditAnnotations") or ()
            if isinstance(a, dict)
        ),
    )


class PolicySet:
    """The compiled policies and their bindings (one per store, rebuilt when they change)."""

    def __init__(self, pairs: list[tuple[_Policy, Mapping[str, Any]]]) -> None:
        self._pairs = pairs
        groups: set[str] = set()
        for policy, _ in pairs:
            for rule in (policy.spec.get("matchConstraints") or {}).get("resourceRules") or ():
                groups.update(rule.get("apiGroups") or ())
        self._groups = frozenset(groups)

    @classmethod
    def of(
        cls, policies: Sequence[Mapping[str, Any]], bindings: Sequence[Mapping[str, Any]]
    ) -> PolicySet:
        compiled = {p.name: p for p in (_compile_policy(obj) for obj in policies)}
        pairs = []
        for b in sorted(bindings, key=lambda b: str((b.get("metadata") or {}).get("name"))):
            spec = b.get("spec") or {}
            policy = compiled.get(str(spec.get("policyName", "")))
            if policy is not None:
                pairs.append((policy, b))
        return cls(pairs)

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def may_match(self, group: str) -> bool:
        """Cheap pre-check: could any policy's rules name this API group?"""
        return bool(self._pairs) and ("*" in self._groups or group in self._groups)

    def admit(self, request: Request, lookup: Lookup) -> Decision:
        decision = Decision()
        ns_obj: Mapping[str, Any] | None = None
        ns_read = False
        for policy, binding in self._pairs:
            bspec = binding.get("spec") or {}
            bname = str((binding.get("metadata") or {}).get("name", ""))
            if not _matches(policy.spec.get("matchConstraints"), request, lookup, required=True):
                continue
            if bspec.get("matchResources") and not _matches(
                bspec.get("matchResources"), request, lookup, required=False
            ):
                continue
            if not ns_read:
                ns_obj = lookup.namespace(request.namespace) if request.namespace else None
                ns_read = True
            actions = [str(a) for a in bspec.get("validationActions") or ("Deny",)]
            for params in _params(policy, bspec, request, lookup, decision, bname, actions):
                _run(policy, bname, actions, request, params, ns_obj, decision)
        return decision


def _params(
    policy: _Policy,
    bspec: Mapping[str, Any],
    request: Request,
    lookup: Lookup,
    decision: Decision,
    bname: str,
    actions: list[str],
) -> list[Mapping[str, Any] | None]:
    if policy.param_kind is None:
        return [None]
    ref = bspec.get("paramRef")
    if not isinstance(ref, dict):
        _fail(
            policy,
            bname,
            actions,
            "failed to configure binding: no params found for a policy with a paramKind",
            "",
            decision,
        )
        return []
    namespace = ref.get("namespace") or request.namespace
    found = lookup.params(
        ParamQuery(
            api_version=policy.param_kind[0],
            kind=policy.param_kind[1],
            namespace=str(namespace or ""),
            name=ref.get("name"),
            selector=ref.get("selector"),
        )
    )
    if not found:
        if ref.get("parameterNotFoundAction") == "Deny":
            _fail(
                policy,
                bname,
                actions,
                "no params found for policy binding with `Deny` parameterNotFoundAction",
                "",
                decision,
            )
        return []
    return list(found)


def _fast_path(
    conditions: Sequence[tuple[str, _Expr]],
    variables: Sequence[tuple[str, _Expr]],
    validations: Sequence[_Validation],
) -> _Expr | None:
    """One program that is true when the policy lets a request through: the match
    conditions are not all true, or every validation is. One evaluation (one conversion of
    the object) decides the common case; anything else runs the expressions one by one.
    Variables are bound in a map, so only when none reads another."""
    if not validations or any("variables" in e.source for _, e in variables):
        return None
    parts = [f"({v.expression.source})" for v in validations]
    body = " && ".join(parts)
    if conditions:
        matched = " && ".join(f"({c.source})" for _, c in conditions)
        body = f"!({matched}) || ({body})"
    if variables:
        fields = ", ".join(f"{_quote(name)}: ({e.source})" for name, e in variables)
        body = f"cel.bind(variables, {{{fields}}}, {body})"
    fast = _expr(body)
    return fast if fast.program is not None else None


def _quote(name: str) -> str:
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _run(
    policy: _Policy,
    bname: str,
    actions: list[str],
    request: Request,
    params: Mapping[str, Any] | None,
    ns_obj: Mapping[str, Any] | None,
    decision: Decision,
) -> None:
    from gitkrm.schema.cel.runtime import CelError

    data: dict[str, Any] = {
        "object": request.obj,
        "oldObject": request.old,
        "request": request.as_cel(),
        "params": params,
        "namespaceObject": ns_obj,
        "variables": {},
    }
    if policy.passes is not None and "Audit" not in actions:
        try:
            if policy.passes.evaluate(data) is True:
                return
        except CelError:
            pass  # the expressions one by one say which
    for name, cond in policy.conditions:
        try:
            ok = cond.evaluate(data)
        except CelError as e:
            if policy.fail_closed:
                _fail(
                    policy,
                    bname,
                    actions,
                    f"failed to evaluate matchCondition '{name}': {e}",
                    "",
                    decision,
                )
            return
        if ok is not True:
            return
    variables: dict[str, Any] = {}
    for name, var in policy.variables:
        try:
            variables[name] = var.evaluate({**data, "variables": variables})
        except CelError:
            continue  # as kube: an error surfaces where a validation reads the variable
    data["variables"] = variables
    for validation in policy.validations:
        try:
            result = validation.expression.evaluate(data)
        except CelError as e:
            if policy.fail_closed:
                _fail(
                    policy,
                    bname,
                    actions,
                    f"expression '{validation.expression.source}' resulted in error: {e}",
                    validation.reason,
                    decision,
                )
            continue
        if result is True:
            continue
        _fail(policy, bname, actions, _message(validation, data), validation.reason, decision)
    if "Audit" in actions:
        for key, audit in policy.audits:
            try:
                value = audit.evaluate(data)
            except CelError:
                continue
            if isinstance(value, str):
                decision.audit[f"{policy.name}/{key}"] = value


def _message(validation: _Validation, data: Mapping[str, Any]) -> str:
    from gitkrm.schema.cel.runtime import message_text

    text = message_text(validation.message_expression, data)
    if text is not None:
        return text
    if validation.message:
        return validation.message
    return f"failed expression: {validation.expression.source.strip()}"


def _fail(
    policy: _Policy, bname: str, actions: list[str], message: str, reason: str, decision: Decision
) -> None:
    if "Deny" in actions:
        decision.denials.append(Denial(policy.name, bname, message, reason or "Invalid"))
    if "Warn" in actions:
        decision.warnings.append(
            f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' with binding "
            f"'{bname}': {message}"
        )
    if "Audit" in actions:
        decision.audit[f"{policy.name}/validation_failure"] = message


def _matches(constraints: Any, request: Request, lookup: Lookup, *, required: bool) -> bool:
    """matchConstraints (a policy) or matchResources (a binding: only narrows)."""
    if not isinstance(constraints, dict):
        return not required
    rules = constraints.get("resourceRules")
    listed = (r for r in rules or () if isinstance(r, dict))
    if (rules is not None or required) and not any(_rule_matches(r, request) for r in listed):
        return False
    if any(
        _rule_matches(r, request)
        for r in constraints.get("excludeResourceRules") or ()
        if isinstance(r, dict)
    ):
        return False
    obj_sel = constraints.get("objectSelector")
    if isinstance(obj_sel, dict) and obj_sel:
        labels = [
            ((o.get("metadata") or {}).get("labels") or {})
            for o in (request.obj, request.old)
            if o is not None
        ]
        if not any(matches_selector(obj_sel, lb) for lb in labels):
            return False
    ns_sel = constraints.get("namespaceSelector")
    if not isinstance(ns_sel, dict) or not ns_sel:
        return True
    if request.namespace:
        ns = lookup.namespace(request.namespace)
        return matches_selector(ns_sel, ((ns or {}).get("metadata") or {}).get("labels") or {})
    if request.kind == "Namespace" and request.group == "":
        own = ((request.obj or request.old or {}).get("metadata") or {}).get("labels") or {}
        return matches_selector(ns_sel, own)
    return True


def matches_selector(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    return label_selector_from_dict(selector).matches(labels)


def _rule_matches(rule: Mapping[str, Any], request: Request) -> bool:
    def has(key: str, value: str) -> bool:
        listed = rule.get(key) or ()
        return "*" in listed or value in listed

    if not has("apiGroups", request.group) or not has("apiVersions", request.version):
        return False
    ops = rule.get("operations") or ()
    if "*" not in ops and request.operation not in ops:
        return False
    full = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    resources = rule.get("resources") or ()
    wanted = {full, "*/*"} | (
        {"*"} if not request.subresource else {f"*/{request.subresource}", f"{request.resource}/*"}
    )
    if not wanted & set(resources):
        return False
    names = rule.get("resourceNames") or ()
    if names and request.name not in names:
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and request.namespace:
        return False
    return not (scope == "Namespaced" and not request.namespace)
