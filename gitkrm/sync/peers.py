"""Flux's and Argo CD's annotations on manifests, read as gitkrm settings (pure).

A repository written for Flux or Argo CD protects objects with their annotations
(`kustomize.toolkit.fluxcd.io/prune: disabled`, `argocd.argoproj.io/sync-options:
Prune=false`, ...). Each one gitkrm honours maps onto a gitkrm behaviour (the table in
docs/concepts.md); `Replace=true` is warned about per object; any
other annotation of either peer is named once per sync, never silently dropped.
Only manifests carrying a peer's annotation are read here, so the common case costs a
prefix test per annotation key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

ARGO: Final = "argocd.argoproj.io/"
FLUX: Final = "kustomize.toolkit.fluxcd.io/"

ARGO_HOOK: Final = ARGO + "hook"
ARGO_HOOK_DELETE: Final = ARGO + "hook-delete-policy"
ARGO_WAVE: Final = ARGO + "sync-wave"
ARGO_SYNC_OPTIONS: Final = ARGO + "sync-options"
ARGO_COMPARE_OPTIONS: Final = ARGO + "compare-options"
FLUX_PRUNE: Final = FLUX + "prune"
FLUX_RECONCILE: Final = FLUX + "reconcile"
FLUX_SSA: Final = FLUX + "ssa"
FLUX_FORCE: Final = FLUX + "force"

# Read elsewhere: waves and hooks (desired, hooks), Flux's post-build switches (postbuild).
_READ_ELSEWHERE: Final = frozenset(
    {ARGO_HOOK, ARGO_HOOK_DELETE, ARGO_WAVE, FLUX + "substitute", FLUX + "decrypt"}
)
SSA_MODES: Final = {"ifnotpresent": "IfNotPresent", "ignore": "Ignore", "override": "Override",
                    "merge": "Merge"}  # fmt: skip
# Argo CD sync options gitkrm honours (lower-cased "Name=value").
_NO_OP: Final = frozenset({"prunelast=true"})  # gitkrm prunes after every apply anyway
_WARNED: Final = {
    "replace=true": "Replace=true is not honoured: gitkrm patches (or, with Force=true, "
    "deletes and re-creates on an immutable change) instead of replacing",
}


@dataclass(frozen=True, slots=True)
class PeerKinds:
    """A peer whose kinds `--interpret` registers: its name and the flag's value."""

    title: str
    flag: str


_FLUX_KINDS: Final = PeerKinds(title="Flux", flag="flux")
_ARGO_KINDS: Final = PeerKinds(title="Argo CD", flag="argocd")
_ARGO_INTERPRETED: Final = frozenset({"Application", "ApplicationSet", "AppProject"})


def interpreted_by(group: str, kind: str) -> PeerKinds | None:
    """The peer whose `--interpret` registers this kind's CRD (Flux's toolkit groups,
    Argo CD's Application, ApplicationSet and AppProject), for the hint of an unknown
    kind; None for any other."""
    if group.endswith(".toolkit.fluxcd.io") or group == "source.extensions.fluxcd.io":
        return _FLUX_KINDS
    if group == "argoproj.io" and kind in _ARGO_INTERPRETED:
        return _ARGO_KINDS
    return None


@dataclass(frozen=True, slots=True)
class PeerSettings:
    """What a manifest's Flux and Argo CD annotations ask of gitkrm."""

    prune: bool = True  # False: left in place when gone from Git
    reconcile: bool = True  # False: left alone
    force: bool = False  # delete and re-create on an immutable change
    server_side: bool = False  # applied server-side whatever the source's mode
    ssa: str = ""  # Flux's ssa mode (IfNotPresent, Ignore, Override, Merge), "" unset
    extraneous: bool = False  # IgnoreExtraneous: left in place, not reported, when gone
    skip_dry_run: bool = False  # SkipDryRunOnMissingResource=true
    validate: bool = True  # False: Validate=false, unknown fields dropped (`sync.parse`)
    warnings: tuple[str, ...] = ()  # for this object (Replace=true)
    unhonoured: tuple[str, ...] = ()  # keys, or `key: option`, gitkrm ignores
    problems: tuple[str, ...] = ()  # unreadable values


def has_peer_keys(ann: Mapping[str, Any]) -> bool:
    return any(k.startswith((ARGO, FLUX)) for k in ann)


def _options(value: Any) -> list[str]:
    return [p.strip() for p in str(value).split(",") if p.strip()]


def _flag(ann: Mapping[str, Any], key: str, value: str) -> bool:
    v = ann.get(key)
    return isinstance(v, str) and v.strip().lower() == value


def read(ann: Mapping[str, Any]) -> PeerSettings:
    """The settings of one manifest's annotations (see the module docstring)."""
    warnings: list[str] = []
    unhonoured: list[str] = []
    problems: list[str] = []
    prune = not _flag(ann, FLUX_PRUNE, "disabled")
    reconcile = not _flag(ann, FLUX_RECONCILE, "disabled")
    force = _flag(ann, FLUX_FORCE, "enabled")
    ssa = ""
    raw_ssa = ann.get(FLUX_SSA)
    if raw_ssa is not None:
        ssa = SSA_MODES.get(str(raw_ssa).strip().lower(), "")
        if not ssa:
            problems.append(
                f"annotation {FLUX_SSA} must be IfNotPresent, Ignore, Override or Merge, "
                f"got {raw_ssa!r}"
            )
    server_side = skip_dry_run = extraneous = False
    validate = True
    for option in _options(ann.get(ARGO_SYNC_OPTIONS, "")):
        low = option.lower().replace(" ", "")
        if low == "prune=false" or low == "delete=false":
            prune = False
        elif low == "serversideapply=true":
            server_side = True
        elif low == "skipdryrunonmissingresource=true":
            skip_dry_run = True
        elif low == "force=true":
            force = True
        elif low == "validate=false":
            validate = False
        elif low in _WARNED:
            warnings.append(_WARNED[low])
        elif low not in _NO_OP:
            unhonoured.append(f"{ARGO_SYNC_OPTIONS}: {option}")
    for option in _options(ann.get(ARGO_COMPARE_OPTIONS, "")):
        if option.lower() == "ignoreextraneous":
            extraneous = True
        else:
            unhonoured.append(f"{ARGO_COMPARE_OPTIONS}: {option}")
    known = {ARGO_SYNC_OPTIONS, ARGO_COMPARE_OPTIONS, FLUX_PRUNE, FLUX_RECONCILE, FLUX_SSA,
             FLUX_FORCE} | _READ_ELSEWHERE  # fmt: skip
    for k in ann:
        if k.startswith((ARGO, FLUX)) and k not in known:
            unhonoured.append(k)
    return PeerSettings(
        prune=prune,
        reconcile=reconcile,
        force=force,
        server_side=server_side,
        ssa=ssa,
        extraneous=extraneous,
        skip_dry_run=skip_dry_run,
        validate=validate,
        warnings=tuple(warnings),
        unhonoured=tuple(unhonoured),
        problems=tuple(problems),
    )


def left_in_place(ann: Mapping[str, Any]) -> str | None:
    """Why a live object gone from Git is not pruned, by its peers' annotations, or None."""
    if not has_peer_keys(ann):
        return None
    s = read(ann)
    if s.extraneous:
        return f"{ARGO_COMPARE_OPTIONS}: IgnoreExtraneous: left in place"
    if not s.prune:
        if _flag(ann, FLUX_PRUNE, "disabled"):
            return f"{FLUX_PRUNE}: disabled: left in place"
        return f"{ARGO_SYNC_OPTIONS}: Prune=false/Delete=false: left in place"
    if not s.reconcile:
        return f"{FLUX_RECONCILE}: disabled: left in place"
    return None


def reconcile_disabled(ann: Mapping[str, Any]) -> bool:
    """A live object Flux's annotation tells to leave alone."""
    return _flag(ann, FLUX_RECONCILE, "disabled")


# -- hooks (run by gitkrm.sync.phases) -----------------------------------------------

HOOK_KEYS: Final = (ARGO_HOOK,)
"""Annotations that make an object a hook (and so allow `metadata.generateName`)."""


class Phase(StrEnum):
    PRE_SYNC = "PreSync"
    SYNC = "Sync"
    POST_SYNC = "PostSync"
    SYNC_FAIL = "SyncFail"
    SKIP = "Skip"
    PRE_DELETE = "PreDelete"
    """Run when the source goes (a child source whose declaring object is deleted), before
    its objects are pruned; never in a sync (gitkrm.agent.tree)."""
    POST_DELETE = "PostDelete"
    """... and after they are pruned."""


DELETE_PHASES: Final = frozenset({Phase.PRE_DELETE, Phase.POST_DELETE})


class DeletePolicy(StrEnum):
    BEFORE_HOOK_CREATION = "BeforeHookCreation"
    HOOK_SUCCEEDED = "HookSucceeded"
    HOOK_FAILED = "HookFailed"


_PHASES: Final = {p.value.lower(): p for p in Phase}
_POLICIES: Final = {p.value.lower(): p for p in DeletePolicy}


def is_hook(annotations: Mapping[str, Any]) -> bool:
    """Whether a manifest is a hook (other than Skip): it may use generateName."""
    value = annotations.get(ARGO_HOOK)
    return isinstance(value, str) and any(
        _PHASES.get(p.strip().lower(), Phase.SKIP) is not Phase.SKIP for p in value.split(",")
    )


def read_hook(annotations: Mapping[str, Any]) -> tuple[str, str, list[str]]:
    """The hook phases and delete policies of a manifest (comma-joined, canonical
    spelling; "" when it is no hook), and problems with their values."""
    raw = annotations.get(ARGO_HOOK)
    if raw is None:
        return "", "", []
    problems: list[str] = []
    phases = _canonical(
        str(raw),
        _PHASES,
        what=f"annotation {ARGO_HOOK}: unknown phase",
        known="PreSync, Sync, PostSync, SyncFail, PreDelete, PostDelete or Skip",
        problems=problems,
    )
    policies = _canonical(
        str(annotations.get(ARGO_HOOK_DELETE, "")),
        _POLICIES,
        what=f"annotation {ARGO_HOOK_DELETE}: unknown policy",
        known="BeforeHookCreation, HookSucceeded or HookFailed",
        problems=problems,
        skip_empty=True,
    )
    return phases, policies, problems


def _canonical(
    raw: str,
    table: Mapping[str, StrEnum],
    *,
    what: str,
    known: str,
    problems: list[str],
    skip_empty: bool = False,
) -> str:
    """The comma-separated values of `raw` in their canonical spelling (any case is read);
    each unknown one adds a problem (`what`, the value, the `known` ones) instead."""
    out: list[str] = []
    for p in raw.split(","):
        if skip_empty and not p.strip():
            continue
        value = table.get(p.strip().lower())
        if value is None:
            problems.append(f"{what} {p.strip()!r} ({known})")
        else:
            out.append(value.value)
    return ",".join(out)
