"""An ApplicationSet's progressive sync (`strategy.type: RollingSync`), as Argo CD's
ApplicationSet controller runs it (`buildAppDependencyList`, `buildAppSyncMap`): each
generated Application belongs to the first step whose `matchExpressions` select its labels
(`In`, `NotIn`; a missing label fails `In` and passes `NotIn`), and a step's Applications
are synced only once every Application of the steps before it is Synced and Healthy.

gitkrm writes that into the Applications it generates: an Application of a later step
carries `gitkrm.io/rolling-sync-after` (the Applications of the step before it), which the
tree reads as its dependencies (`ChildSpec.depends_on`); an Application no step selects, or
of a step with `maxUpdate: 0`, has its automated sync removed, so it is compared and
reported OutOfSync but never applied, as Argo CD leaves it waiting for a manual sync.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from .model import Unhonoured

AFTER: Final = "gitkrm.io/rolling-sync-after"
"""On a generated Application: the Applications (names, the ApplicationSet's namespace) that
must be Synced and Healthy before it syncs, comma-separated."""

Fail = Callable[[str, str], Exception]


def steps_of(spec: Mapping[str, Any], fail: Fail) -> list[Mapping[str, Any]] | None:
    """The RollingSync steps of an ApplicationSet spec (None: no progressive sync)."""
    strategy = spec.get("strategy")
    if not strategy:
        return None
    if not isinstance(strategy, Mapping):
        raise fail("spec.strategy", "must be an object")
    kind = strategy.get("type") or "AllAtOnce"
    if kind == "AllAtOnce":
        return None
    if kind != "RollingSync":
        raise fail("spec.strategy.type", f"{kind!r}: AllAtOnce or RollingSync")
    steps = (strategy.get("rollingSync") or {}).get("steps") or []
    if not isinstance(steps, list) or not all(isinstance(s, Mapping) for s in steps):
        raise fail("spec.strategy.rollingSync.steps", "must be a list of steps")
    for i, step in enumerate(steps):
        for j, e in enumerate(step.get("matchExpressions") or []):
            if not isinstance(e, Mapping) or e.get("operator") not in ("In", "NotIn"):
                raise fail(f"spec.strategy.rollingSync.steps[{i}].matchExpressions[{j}]",
                           "operator must be In or NotIn")  # fmt: skip
    return steps or None


def unhonoured(spec: Mapping[str, Any]) -> list[Unhonoured]:
    """What of the strategy gitkrm does not do: a partial `maxUpdate` (a step's
    Applications sync together), `deletionOrder: Reverse`."""
    out: list[Unhonoured] = []
    strategy = spec.get("strategy") or {}
    steps = (strategy.get("rollingSync") or {}).get("steps") or []
    for i, step in enumerate(steps):
        limit = step.get("maxUpdate") if isinstance(step, Mapping) else None
        if limit not in (None, 0, "0", "0%", "100%"):
            out.append(Unhonoured(f"spec.strategy.rollingSync.steps[{i}].maxUpdate",
                                  "the Applications of a step are synced together"))  # fmt: skip
    if strategy.get("deletionOrder") not in (None, "AllAtOnce"):
        out.append(Unhonoured("spec.strategy.deletionOrder", "Applications are deleted at once"))
    return out


def _selects(step: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    for e in step.get("matchExpressions") or []:
        values = [str(v) for v in e.get("values") or []]
        key = str(e.get("key") or "")
        if key not in labels:
            if e.get("operator") == "In":
                return False
            continue
        if (str(labels[key]) in values) != (e.get("operator") == "In"):
            return False
    return True


def _holds(step: Mapping[str, Any]) -> bool:
    return step.get("maxUpdate") in (0, "0", "0%")


def apply_steps(apps: Sequence[dict[str, Any]], steps: Sequence[Mapping[str, Any]]) -> None:
    """Mark each of `apps` (generated Applications) with its step's ordering, in place."""
    by_step: list[list[dict[str, Any]]] = [[] for _ in steps]
    for app in apps:
        labels = app["metadata"].get("labels") or {}
        step = next((i for i, s in enumerate(steps) if _selects(s, labels)), None)
        if step is None or _holds(steps[step]):
            _manual(app)
        if step is not None:
            by_step[step].append(app)
    before: list[str] = []
    for members in by_step:
        for app in members:
            if before:
                annotations = dict(app["metadata"].get("annotations") or {})
                annotations[AFTER] = ",".join(before)
                app["metadata"]["annotations"] = annotations
        if members:  # a held step holds the steps after it until it is synced by hand
            before = sorted(str(a["metadata"]["name"]) for a in members)


def _manual(app: dict[str, Any]) -> None:
    """No automated sync: compared and reported, not applied (Argo CD's held Application)."""
    policy = dict(app["spec"].get("syncPolicy") or {})
    policy.pop("automated", None)
    app["spec"] = {**app["spec"], "syncPolicy": policy}


def after(annotations: Mapping[str, Any]) -> list[str]:
    """The Application names of `AFTER` on an Application's annotations."""
    return [n for n in str(annotations.get(AFTER) or "").split(",") if n]


__all__ = ["AFTER", "after", "apply_steps", "steps_of", "unhonoured"]
