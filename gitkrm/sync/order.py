"""The order objects are applied in, and pruned in (the reverse).

Namespaces and CRDs first (custom resources need their CRD established), then ascending
`gitkrm.io/wave`, then Helm's install order of kinds (`InstallOrder` of helm's
pkg/releaseutil/kind_sorter.go; unknown kinds last, alphabetically), then namespace and
name. `config.kubernetes.io/depends-on` adds edges: a dependency in the same wave is
applied first; one in a later wave, or a cycle, is an error naming the objects. A
dependency outside the revision is left to the store (it is not ordered).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitkrm.krm import ObjectRef
from gitkrm.sync import keys
from gitkrm.sync.desired import Desired, wave_of
from gitkrm.sync.order_keys import SortKey, sort_key, stage_of

__all__ = ["Ordered", "SortKey", "order", "prune_order", "sort_key", "stage_of"]


def describe_stage(stage: tuple[int, int]) -> str:
    return "the Namespaces and CRDs stage" if stage[0] == 0 else f"wave {stage[1]}"


@dataclass(frozen=True, slots=True)
class Ordered:
    """Desired objects in apply order, and the ordering errors (with file:line)."""

    objects: tuple[Desired, ...]
    errors: tuple[tuple[Desired, str], ...]


def order(objects: Sequence[Desired]) -> Ordered:
    keyed = sorted(objects, key=lambda d: d.order_key)
    if not any(d.depends_on for d in keyed):
        return Ordered(tuple(keyed), ())
    by_ref = {d.ref: d for d in keyed}
    errors: list[tuple[Desired, str]] = []
    edges: dict[ObjectRef, list[ObjectRef]] = {}  # dependency -> dependents, same stage
    for d in keyed:
        mine = stage_of(d.ref, d.wave)
        for dep_ref in d.depends_on:
            dep = by_ref.get(dep_ref)
            if dep is None:
                continue
            theirs = stage_of(dep.ref, dep.wave)
            if theirs > mine:
                errors.append(
                    (
                        d,
                        f"{d.ref} ({describe_stage(mine)}) depends on {dep.ref} at "
                        f"{dep.location}, which is applied later ({describe_stage(theirs)})",
                    )
                )
            elif theirs == mine:
                edges.setdefault(dep.ref, []).append(d.ref)
    if errors:
        return Ordered(tuple(keyed), tuple(errors))
    result, cycle = _topological(keyed, edges)
    if cycle:
        names = " -> ".join(str(r) for r in cycle)
        where = by_ref[cycle[0]]
        return Ordered(tuple(keyed), ((where, f"dependency cycle: {names}"),))
    return Ordered(tuple(result), ())


def _topological(
    keyed: Sequence[Desired], edges: Mapping[ObjectRef, list[ObjectRef]]
) -> tuple[list[Desired], list[ObjectRef]]:
    """Kahn's algorithm, always taking the smallest sort key that is ready."""
    position = {d.ref: i for i, d in enumerate(keyed)}
    indegree = dict.fromkeys(position, 0)
    for targets in edges.values():
        for t in targets:
            indegree[t] += 1
    ready = [i for i, d in enumerate(keyed) if indegree[d.ref] == 0]
    heapq.heapify(ready)
    out: list[Desired] = []
    while ready:
        i = heapq.heappop(ready)
        d = keyed[i]
        out.append(d)
        for t in edges.get(d.ref, ()):
            indegree[t] -= 1
            if indegree[t] == 0:
                heapq.heappush(ready, position[t])
    if len(out) == len(keyed):
        return out, []
    return out, _find_cycle({r for r, n in indegree.items() if n > 0}, edges)


def _find_cycle(
    nodes: set[ObjectRef], edges: Mapping[ObjectRef, list[ObjectRef]]
) -> list[ObjectRef]:
    """One cycle among `nodes` (left over by Kahn's algorithm), as `A -> B` meaning "A
    depends on B". Each left-over node has a dependency that is left over too."""
    deps: dict[ObjectRef, list[ObjectRef]] = {}
    for dep, dependents in edges.items():
        if dep in nodes:
            for t in dependents:
                if t in nodes:
                    deps.setdefault(t, []).append(dep)
    node = min(nodes, key=str)
    seen: dict[ObjectRef, int] = {}
    path: list[ObjectRef] = []
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = min(deps[node], key=str)
    cycle = path[seen[node] :]
    return [*cycle, cycle[0]]


def prune_order(refs: Iterable[tuple[ObjectRef, Mapping[str, Any] | None]]) -> list[ObjectRef]:
    """Objects to delete, in reverse apply order (waves read from the live objects)."""

    def key(item: tuple[ObjectRef, Mapping[str, Any] | None]) -> SortKey:
        ref, live = item
        wave = wave_of(keys.annotations_of(live))[0] if live is not None else 0
        return sort_key(ref, wave)

    return [ref for ref, _ in sorted(refs, key=key, reverse=True)]
