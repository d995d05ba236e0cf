"""What a revision's peers' annotations ask that gitkrm does not do, said once per sync.

`Replace=true` is warned about per object (naming it), as are the unknown fields
`Validate=false` dropped (`parse`); any other
annotation of Flux or Argo CD that gitkrm does not honour is named once, with how many
objects carry it and where the first one is (see `peers`).
"""

from __future__ import annotations

from collections.abc import Iterable

from gitkrm.sync.desired import Desired
from gitkrm.sync.problems import describe_ref


def annotation_warnings(objects: Iterable[Desired]) -> tuple[str, ...]:
    out: list[str] = []
    unhonoured: dict[str, tuple[Desired, int]] = {}
    for d in objects:
        if d.warnings:
            out.extend(f"{d.location}: {describe_ref(d.ref)}: {w}" for w in d.warnings)
        for u in d.unhonoured:
            first, n = unhonoured.get(u, (d, 0))
            unhonoured[u] = (first, n + 1)
    for u, (d, n) in unhonoured.items():
        objects_ = "1 object" if n == 1 else f"{n} objects"
        out.append(
            f"annotation {u!r} is not honoured by gitkrm ({objects_}, first "
            f"{describe_ref(d.ref)} at {d.location})"
        )
    return tuple(out)
