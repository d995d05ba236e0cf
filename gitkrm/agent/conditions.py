"""The conditions of the statuses the agent writes: its GitSource's, and those it keeps on
Flux's and Argo CD's objects in their own form.

`Conditions` holds one object's conditions while its status is built: every condition set
carries the same time and the object's generation, and its message is clipped
(`clip`: a status is no log). The rules of a condition (lastTransitionTime moves only
when the status does) are `gitkrm.krm.conditions`'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

from gitkrm.krm.clock import now_rfc3339
from gitkrm.krm.conditions import Condition, find_condition, remove_condition, set_condition

MAX_MESSAGE: Final = 1024


def clip(text: str) -> str:
    """`text`, cut to MAX_MESSAGE characters (the cut marked `...`)."""
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


class Conditions:
    """One object's conditions being rewritten (`items`: a new list, the input untouched),
    all at one time `now` and with `observedGeneration` when a generation is given."""

    def __init__(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        generation: int | None,
        now: str | None = None,
    ) -> None:
        self.items: list[Condition] = [cast("Condition", dict(c)) for c in items]
        self.now = now or now_rfc3339()
        self.extra: Condition = {} if generation is None else {"observedGeneration": generation}

    def get(self, kind: str) -> Condition | None:
        return find_condition(self.items, kind)

    def set(self, kind: str, status: str, reason: str, message: str) -> None:
        self.items = set_condition(
            self.items, kind, status, reason, clip(message), now=self.now, extra=self.extra
        )

    def drop(self, *kinds: str) -> None:
        for k in kinds:
            self.items = remove_condition(self.items, k)
