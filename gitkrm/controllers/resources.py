"""Resource arithmetic for scheduling: a pod's requests and a node's allocatable capacity,
as integers (CPU in millicores, everything else in units, rounded up)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from gitkrm.krm.quantity import QuantityError, parse_quantity

Resources = dict[str, int]


def amount(name: str, value: str | int | float) -> int:
    try:
        q = parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        return 0
    if name == "cpu":
        q = q * 1000
    return math.ceil(q)


def parse_list(values: object) -> Resources:
    """A ResourceList ({"cpu": "100m", ...}) as integers."""
    if not isinstance(values, Mapping):
        return {}
    return {str(k): amount(str(k), v) for k, v in values.items()}


def _requests(container: object) -> Resources:
    if not isinstance(container, Mapping):
        return {}
    res = container.get("resources")
    if not isinstance(res, Mapping):
        return {}
    requests = res.get("requests")
    if not isinstance(requests, Mapping):
        requests = res.get("limits")  # a limit without a request requests the limit
    return parse_list(requests)


def pod_requests(pod: Mapping[str, object]) -> Resources:
    """What the scheduler reserves for a pod: the sum over its containers, at least the
    largest init container (restartable init containers add up), plus overhead and the pod
    itself (`pods: 1`)."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return {"pods": 1}
    total: Resources = {}
    for c in spec.get("containers") or ():
        for k, v in _requests(c).items():
            total[k] = total.get(k, 0) + v
    init_max: Resources = {}
    sidecars: Resources = {}
    for c in spec.get("initContainers") or ():
        req = _requests(c)
        if isinstance(c, Mapping) and c.get("restartPolicy") == "Always":
            for k, v in req.items():
                sidecars[k] = sidecars.get(k, 0) + v
            continue
        for k, v in req.items():
            init_max[k] = max(init_max.get(k, 0), v + sidecars.get(k, 0))
    for k, v in sidecars.items():
        total[k] = total.get(k, 0) + v
    for k, v in init_max.items():
        total[k] = max(total.get(k, 0), v)
    for k, v in parse_list(spec.get("overhead")).items():
        total[k] = total.get(k, 0) + v
    total["pods"] = 1
    return total


def add(into: Resources, res: Mapping[str, int], sign: int = 1) -> None:
    for k, v in res.items():
        into[k] = into.get(k, 0) + sign * v


def insufficient(
    allocatable: Mapping[str, int], used: Mapping[str, int], want: Mapping[str, int]
) -> list[str]:
    """The resources `want` does not fit in (allocatable - used)."""
    out = []
    for k, v in want.items():
        if v <= 0:
            continue
        if used.get(k, 0) + v > allocatable.get(k, 0):
            out.append(k)
    return out
