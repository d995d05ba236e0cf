"""What a sync did: one result per object, counts, errors and a timing breakdown."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from gitkrm.krm import ObjectRef


class SyncStatus(StrEnum):
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class Action(StrEnum):
    CREATED = "created"
    CONFIGURED = "configured"
    UNCHANGED = "unchanged"
    PRUNED = "pruned"
    FAILED = "failed"
    REFUSED = "refused"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class ObjectResult:
    """What happened to one object; `path:line` names its manifest when it has one."""

    ref: ObjectRef
    action: Action
    message: str = ""
    path: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}: " if self.path and self.line else ""
        tail = f": {self.message}" if self.message else ""
        return f"{where}{self.ref} {self.action.value}{tail}"


TIMING_KEYS = ("git", "render", "diff", "apply")


@dataclass(frozen=True, slots=True)
class SyncResult:
    """One sync of one revision. Failed when the revision could not be used (every
    problem in `errors`) or when any object failed or was refused (the others applied)."""

    revision: str
    status: SyncStatus
    objects: tuple[ObjectResult, ...]
    errors: tuple[str, ...]
    counts: Mapping[str, int] = field(default_factory=dict)
    timings_ms: Mapping[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is SyncStatus.SUCCEEDED

    @property
    def changed(self) -> bool:
        """Whether anything was written (created, configured or pruned)."""
        return any(self.counts.get(a.value, 0) for a in _WRITES)

    def problems(self) -> list[str]:
        """One line per error and per failed or refused object, for logs and status."""
        lines = list(self.errors)
        lines.extend(str(o) for o in self.objects if o.action in (Action.FAILED, Action.REFUSED))
        return lines


_WRITES = (Action.CREATED, Action.CONFIGURED, Action.PRUNED)


def count(objects: Iterable[ObjectResult]) -> dict[str, int]:
    out = dict.fromkeys((a.value for a in Action), 0)
    for o in objects:
        out[o.action.value] += 1
    return out


def make_result(
    *,
    revision: str,
    objects: Iterable[ObjectResult] = (),
    errors: Iterable[str] = (),
    timings_ms: Mapping[str, float] | None = None,
) -> SyncResult:
    """A result whose status and counts follow from its objects and errors."""
    objs = tuple(objects)
    errs = tuple(errors)
    counts = count(objs)
    failed = errs or counts[Action.FAILED.value] or counts[Action.REFUSED.value]
    timings = dict.fromkeys(TIMING_KEYS, 0.0)
    timings.update(timings_ms or {})
    return SyncResult(
        revision=revision,
        status=SyncStatus.FAILED if failed else SyncStatus.SUCCEEDED,
        objects=objs,
        errors=errs,
        counts=MappingProxyType(counts),
        timings_ms=MappingProxyType({k: round(v, 3) for k, v in timings.items()}),
    )
