"""GitSource `spec.healthCheckExprs`: CEL expressions deciding the health of custom kinds.

Flux's shape (kustomize-controller 2.5): per `apiVersion` and `kind`, a `current` expression
and optional `inProgress` and `failed` ones, over the object's top-level fields (`metadata`,
`spec`, `status`, ...). As Flux does, kstatus' generic checks come first (deletion, a stale
`status.observedGeneration`), then `inProgress`, `failed` and `current` in that order; none
true is InProgress. An expression that errs (a field not there yet) counts as not true; when
none is true, the first error is the InProgress message. Compiled once per source
configuration; the CEL runtime is imported only when a source has expressions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitkrm.errors import BadRequest
from gitkrm.health.result import Health, HealthResult
from gitkrm.krm import Obj

_VARIABLES = frozenset({"apiVersion", "kind", "metadata", "spec", "status", "data"})
_FIELDS = (
    ("inProgress", Health.IN_PROGRESS),
    ("failed", Health.FAILED),
    ("current", Health.CURRENT),
)


@dataclass(frozen=True, slots=True)
class HealthCheckExpr:
    """One entry of spec.healthCheckExprs, as written."""

    api_version: str
    kind: str
    current: str
    in_progress: str = ""
    failed: str = ""

    def to_spec(self) -> dict[str, str]:
        out = {"apiVersion": self.api_version, "kind": self.kind, "current": self.current}
        if self.in_progress:
            out["inProgress"] = self.in_progress
        if self.failed:
            out["failed"] = self.failed
        return out


class HealthChecks:
    """The compiled expressions of one source, by (apiVersion, kind)."""

    def __init__(self, exprs: Sequence[HealthCheckExpr]) -> None:
        from gitkrm.schema.cel.runtime import CelError, compile_expression

        self.exprs = tuple(exprs)
        self._programs: dict[tuple[str, str], list[tuple[Health, Any]]] = {}
        for i, e in enumerate(self.exprs):
            programs = []
            for name, health in _FIELDS:
                source = e.to_spec().get(name, "")
                if not source:
                    continue
                try:
                    programs.append((health, compile_expression(source, _VARIABLES)))
                except CelError as err:
                    raise BadRequest(
                        f"spec.healthCheckExprs[{i}].{name} ({e.kind}): {err}"
                    ) from None
            self._programs[(e.api_version, e.kind)] = programs

    @classmethod
    def from_spec(cls, raw: object) -> HealthChecks | None:
        """Parse and compile `spec.healthCheckExprs` (None when absent or empty)."""
        if not raw:
            return None
        if not isinstance(raw, list):
            raise BadRequest("spec.healthCheckExprs must be a list")
        exprs = []
        for i, item in enumerate(raw):
            if not isinstance(item, Mapping):
                raise BadRequest(f"spec.healthCheckExprs[{i}] must be an object")
            missing = [k for k in ("apiVersion", "kind", "current") if not item.get(k)]
            if missing:
                raise BadRequest(f"spec.healthCheckExprs[{i}]: {', '.join(missing)} required")
            exprs.append(
                HealthCheckExpr(
                    api_version=str(item["apiVersion"]),
                    kind=str(item["kind"]),
                    current=str(item["current"]),
                    in_progress=str(item.get("inProgress") or ""),
                    failed=str(item.get("failed") or ""),
                )
            )
        return cls(exprs)

    @classmethod
    def merged(cls, each: Iterable[HealthChecks | None]) -> HealthChecks | None:
        """The expressions of several sources (a later one wins for the same kind)."""
        by_kind: dict[tuple[str, str], HealthCheckExpr] = {}
        for checks in each:
            for e in checks.exprs if checks is not None else ():
                by_kind[(e.api_version, e.kind)] = e
        return cls(list(by_kind.values())) if by_kind else None

    def to_spec(self) -> list[dict[str, str]]:
        return [e.to_spec() for e in self.exprs]

    def verdict(self, obj: Obj) -> HealthResult | None:
        """The expressions' verdict on an object of a kind they name (else None)."""
        programs = self._programs.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
        if programs is None:
            return None
        from gitkrm.schema.cel.runtime import CelError

        data = {name: obj.get(name) or {} for name in _VARIABLES}
        data["apiVersion"], data["kind"] = obj.get("apiVersion"), obj.get("kind")
        error = ""
        for health, program in programs:
            try:
                result = program.evaluate(data)
            except CelError as e:  # a field not there yet: not true, and said if none is
                error = error or str(e)
                continue
            if result is True:
                return HealthResult(health, _MESSAGES[health], "HealthCheckExpr")
        if error:
            return HealthResult(
                Health.IN_PROGRESS, f"health check expression: {error}", "HealthCheckExprError"
            )
        return HealthResult(
            Health.IN_PROGRESS, "no health check expression is true yet", "HealthCheckExpr"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HealthChecks) and other.exprs == self.exprs

    def __hash__(self) -> int:
        return hash(self.exprs)


_MESSAGES = {
    Health.CURRENT: "the current expression is true",
    Health.IN_PROGRESS: "the inProgress expression is true",
    Health.FAILED: "the failed expression is true",
}
