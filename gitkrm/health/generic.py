"""kstatus's generic rules, checked before any kind's own rules: deletion, an unobserved
generation, and the standard Reconciling / Stalled conditions."""

from __future__ import annotations

from gitkrm.health.fields import conditions, get_str
from gitkrm.health.result import Health, HealthResult, current, failed, in_progress
from gitkrm.krm import Obj
from gitkrm.krm.fields import field_value


def generic(obj: Obj) -> HealthResult | None:
    """A verdict from what every object carries, or None when the kind's rules decide."""
    if get_str(obj, "metadata", "deletionTimestamp"):
        return HealthResult(Health.TERMINATING, "Resource scheduled for deletion", "Deleting")
    stale = unobserved_generation(obj)
    if stale is not None:
        return stale
    for c in conditions(obj):
        if c.get("status") != "True":
            continue
        if c.get("type") == "Reconciling":
            return in_progress(str(c.get("reason") or "Reconciling"), str(c.get("message") or ""))
        if c.get("type") == "Stalled":
            return failed(str(c.get("reason") or "Stalled"), str(c.get("message") or ""))
    return None


def unobserved_generation(obj: Obj) -> HealthResult | None:
    """InProgress when status.observedGeneration lags metadata.generation (both present)."""
    generation = field_value(obj, "metadata", "generation")
    observed = field_value(obj, "status", "observedGeneration")
    if not _is_int(generation) or not _is_int(observed) or generation == observed:
        return None
    kind = get_str(obj, "kind", default="Resource")
    return in_progress(
        "LatestGenerationNotObserved",
        f"{kind} generation is {generation}, but latest observed generation is {observed}",
    )


def generation_set(obj: Obj) -> HealthResult | None:
    """InProgress unless both metadata.generation and status.observedGeneration are set (for
    kinds whose controller always sets them once it has acted)."""
    kind = get_str(obj, "kind", default="Resource")
    if not _is_int(field_value(obj, "metadata", "generation")):
        return in_progress("NoGeneration", f"{kind} metadata.generation not found")
    if not _is_int(field_value(obj, "status", "observedGeneration")):
        return in_progress("NoObservedGeneration", f"{kind} status.observedGeneration not found")
    return None


def ready_condition(obj: Obj) -> HealthResult:
    """Kinds without rules of their own: a Ready condition decides when there is one (the
    convention of Flux and of gitkrm's GitSource), else the object is Current."""
    for c in conditions(obj):
        if c.get("type") != "Ready":
            continue
        message = str(c.get("message") or "")
        if c.get("status") == "True":
            return current(message or "Resource is Ready")
        return in_progress(str(c.get("reason") or "NotReady"), message or "Resource is not Ready")
    return current("Resource is current")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
