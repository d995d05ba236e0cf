"""Argo CD's resource hooks and sync phases, as values (pure).

`argocd.argoproj.io/hook` names the phases an object runs in (PreSync, Sync, PostSync,
SyncFail; `Skip`: never applied), `argocd.argoproj.io/hook-delete-policy` when a hook's
object is deleted (BeforeHookCreation, the default; HookSucceeded; HookFailed). A hook may
have only `metadata.generateName`: each run creates a new object. Hooks are not synced
objects: they are not in the inventory and not pruned, they run once per revision synced
(`gitkrm.sync.phases` runs them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from gitkrm.krm import GVK, ObjectRef
from gitkrm.sync.desired import Desired
from gitkrm.sync.peers import HOOK_KEYS, DeletePolicy, Phase, is_hook, read_hook

__all__ = ["HOOK_KEYS", "NO_HOOKS", "DeletePolicy", "HookRun",
           "HookState", "Hooks", "Phase", "is_hook", "phases_of",
           "policies_of", "read_hook", "split"]  # fmt: skip


def phases_of(d: Desired) -> frozenset[Phase]:
    return frozenset(Phase(p) for p in d.hook.split(",") if p)


def policies_of(d: Desired) -> frozenset[DeletePolicy]:
    """A hook's delete policies (BeforeHookCreation when none is given, as Argo CD)."""
    found = frozenset(DeletePolicy(p) for p in d.hook_delete.split(",") if p)
    return found or frozenset({DeletePolicy.BEFORE_HOOK_CREATION})


@dataclass(frozen=True, slots=True)
class Hooks:
    """The hooks of a revision, by phase, in apply order."""

    by_phase: Mapping[Phase, tuple[Desired, ...]]

    def of(self, phase: Phase) -> tuple[Desired, ...]:
        return self.by_phase.get(phase, ())

    def __bool__(self) -> bool:
        return any(self.by_phase.values())


NO_HOOKS: Final = Hooks({})


def split(objects: Sequence[Desired]) -> tuple[list[Desired], Hooks] | None:
    """The synced objects and the hooks of a revision (objects in apply order), or None
    when it has no hook (the common case: the objects are used as they are)."""
    if not any(d.hook for d in objects):
        return None
    kept: list[Desired] = []
    by_phase: dict[Phase, list[Desired]] = {}
    for d in objects:
        if not d.hook:
            kept.append(d)
            continue
        for phase in phases_of(d):
            if phase is not Phase.SKIP:
                by_phase.setdefault(phase, []).append(d)
    return kept, Hooks({p: tuple(ds) for p, ds in by_phase.items()})


def kinds_of(objects: Iterable[Desired]) -> dict[tuple[str, str], GVK]:
    out: dict[tuple[str, str], GVK] = {}
    for d in objects:
        gk = (d.ref.group, d.ref.kind)
        if gk not in out:
            out[gk] = d.gvk
    return out


class HookState(StrEnum):
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


@dataclass(frozen=True, slots=True)
class HookRun:
    """One run of one hook: the object it created (its generated name included)."""

    phase: Phase
    ref: ObjectRef
    state: HookState
    message: str = ""
    path: str = ""
    line: int = 0
    deleted: bool = False  # by its delete policy

    @property
    def ok(self) -> bool:
        return self.state is HookState.SUCCEEDED

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}: " if self.path and self.line else ""
        tail = f": {self.message}" if self.message else ""
        return f"{where}{self.phase.value} hook {self.ref} {self.state.value.lower()}{tail}"

    def to_dict(self) -> dict[str, object]:
        """As the GitSource status, the note and the status file show it."""
        out: dict[str, object] = {
            "phase": self.phase.value,
            "kind": self.ref.kind,
            "name": self.ref.name,
            "result": self.state.value,
        }
        if self.ref.namespace:
            out["namespace"] = self.ref.namespace
        if self.message:
            out["message"] = self.message
        if self.deleted:
            out["deleted"] = True
        return out
