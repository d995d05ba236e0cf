"""What a sync did: one result per object, counts, errors and a timing breakdown."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import TYPE_CHECKING, Generic, TypeVar, cast

from gitkrm.krm import ObjectRef

if TYPE_CHECKING:
    from gitkrm.sync.hooks import HookRun


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
COUNT_KEYS = ("created", "configured", "pruned", "unchanged", "failed", "refused")
"""The counts a status, a note, a status file and the log show (`skipped` is internal)."""


V = TypeVar("V")


class _Fields(Generic[V]):
    """A frozen record that also reads as a mapping of its fields (for status documents,
    notes and log lines, which spell them as keys), equal to a mapping of the same items.
    Every field holds a `V`."""

    __slots__ = ()

    def __getitem__(self, key: str) -> V:
        if key not in self._keys():
            raise KeyError(key)
        return cast(V, getattr(self, key))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(zip(self._keys(), self._values(), strict=True)) == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, k) for k in self._keys())

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    @classmethod
    def _keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, eq=False)
class Counts(_Fields[int], Mapping[str, int]):
    """How many objects each action touched."""

    created: int = 0
    configured: int = 0
    pruned: int = 0
    unchanged: int = 0
    failed: int = 0
    refused: int = 0
    skipped: int = 0

    @classmethod
    def of(cls, objects: Iterable[ObjectResult]) -> Counts:
        tally = dict.fromkeys((a.value for a in Action), 0)
        for o in objects:
            tally[o.action.value] += 1
        return cls(**tally)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> Counts:
        """From a status document or a note (unknown keys and non-integers ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known and type(v) is int})

    @property
    def changed(self) -> bool:
        """Whether anything was written (created, configured or pruned)."""
        return bool(self.created or self.configured or self.pruned)

    @property
    def bad(self) -> int:
        """Objects failed or refused."""
        return self.failed + self.refused

    def shown(self) -> dict[str, int]:
        """The counts reported outside the engine (`COUNT_KEYS`), in their order."""
        return {k: self[k] for k in COUNT_KEYS}


@dataclass(frozen=True, slots=True, eq=False)
class Timings(_Fields[float], Mapping[str, float]):
    """Milliseconds per phase of a sync: fetching from Git, rendering, diffing, applying."""

    git: float = 0.0
    render: float = 0.0
    diff: float = 0.0
    apply: float = 0.0

    @classmethod
    def of(cls, timings_ms: Mapping[str, float] | None) -> Timings:
        """Rounded to microseconds; unknown phases ignored."""
        given = timings_ms or {}
        return cls(*(round(float(given.get(k, 0.0)), 3) for k in TIMING_KEYS))

    @property
    def total(self) -> float:
        return self.git + self.render + self.diff + self.apply


@dataclass(frozen=True, slots=True)
class SyncResult:
    """One sync of one revision. Failed when the revision could not be used (every
    problem in `errors`) or when any object failed or was refused (the others applied)."""

    revision: str
    status: SyncStatus
    objects: tuple[ObjectResult, ...]
    errors: tuple[str, ...]
    counts: Counts = Counts()
    timings_ms: Timings = Timings()
    releases: tuple[Mapping[str, str], ...] = ()  # the Helm releases rendered (Release.to_report)
    hooks: tuple[HookRun, ...] = ()  # the hooks this sync ran, in order
    warnings: tuple[str, ...] = ()  # annotations not honoured, once per sync
    guard: str = ""  # the guard that refused the revision (sync.guards.Guard), if one did

    @property
    def ok(self) -> bool:
        return self.status is SyncStatus.SUCCEEDED

    @property
    def changed(self) -> bool:
        """Whether anything was written (created, configured or pruned)."""
        return self.counts.changed

    def problems(self) -> list[str]:
        """One line per error and per failed or refused object, for logs and status."""
        lines = list(self.errors)
        lines.extend(str(o) for o in self.objects if o.action in (Action.FAILED, Action.REFUSED))
        lines.extend(str(h) for h in self.hooks if not h.ok)
        return lines


def count(objects: Iterable[ObjectResult]) -> Counts:
    return Counts.of(objects)


def make_result(
    *,
    revision: str,
    objects: Iterable[ObjectResult] = (),
    errors: Iterable[str] = (),
    timings_ms: Mapping[str, float] | None = None,
    releases: Iterable[Mapping[str, str]] = (),
    hooks: Iterable[HookRun] = (),
    warnings: Iterable[str] = (),
    guard: str = "",
) -> SyncResult:
    """A result whose status and counts follow from its objects, errors and hooks."""
    objs = tuple(objects)
    errs = tuple(errors)
    runs = tuple(hooks)
    counts = Counts.of(objs)
    bad = errs or counts.bad or any(not h.ok for h in runs)
    return SyncResult(
        revision=revision,
        status=SyncStatus.FAILED if bad else SyncStatus.SUCCEEDED,
        objects=objs,
        errors=errs,
        counts=counts,
        timings_ms=Timings.of(timings_ms),
        releases=tuple(releases),
        hooks=runs,
        warnings=tuple(warnings),
        guard=guard,
    )
