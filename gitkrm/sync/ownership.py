"""Who owns a live object, and whether this source may write it (cli-utils' policies).

Ownership is the `gitkrm.io/source` label, gitkrm's own key (`keys.owner_of`; an object
older gitkrm labelled only `app.kubernetes.io/managed-by: gitkrm` is owned by the source
whose inventory lists it). An object of another gitkrm source is never touched. An object
no gitkrm source owns is adopted only as the adoption policy allows: never (the default),
if-unowned (no other tool's `app.kubernetes.io/managed-by` on it), or always (even over
another tool's label); an object the agent wrote as a stand-in (`gitkrm.io/stand-in:
"true"`, a peer's CRD) is adopted by any source. gitkrm never writes
`app.kubernetes.io/managed-by` itself: a manifest's value (Helm, ...) is the manifest's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitkrm.sync import keys
from gitkrm.sync.options import AdoptionPolicy


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    adopt: bool = False
    reason: str = ""


def decide(
    live: Mapping[str, Any] | None, *, source: str, policy: AdoptionPolicy, listed: bool = False
) -> Decision:
    """May `source` create or patch this object (None: it does not exist)? `listed`: the
    source's inventory lists it."""
    if live is None:
        return Decision(True)
    owner = keys.owner_of(live, listed_by=source if listed else None)
    if owner == source:
        return Decision(True)
    if owner is not None:
        return Decision(False, reason=f'conflict: owned by gitkrm source "{owner}"')
    if keys.flag(live, keys.STAND_IN, "true"):
        return Decision(True, adopt=True)  # written by the agent until Git had it
    manager = keys.labels_of(live).get(keys.MANAGED_BY)
    other_tool = isinstance(manager, str) and manager not in ("", keys.MANAGER)
    if policy is AdoptionPolicy.ALWAYS:
        return Decision(True, adopt=True)
    if policy is AdoptionPolicy.IF_UNOWNED and not other_tool:
        return Decision(True, adopt=True)
    if other_tool:
        return Decision(
            False,
            reason=(
                f'conflict: the object exists and is managed by "{manager}"; adoption '
                f"policy {policy.value} does not take it over"
            ),
        )
    return Decision(
        False,
        reason=(
            "conflict: the object exists and no gitkrm source owns it; adoption policy "
            f"{policy.value} leaves it alone"
        ),
    )
