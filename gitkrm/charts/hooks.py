"""Helm hooks as the sync phases' hooks: `helm.sh/hook` translated to Argo CD's
`argocd.argoproj.io/hook` annotations on the rendered objects, so the engine treats a chart's
hooks as it treats any hook (Argo CD maps Helm hooks the same way).

| Helm                                     | first sync (install)   | later syncs (upgrade)  |
|------------------------------------------|------------------------|------------------------|
| `pre-install`                            | `PreSync`              | dropped                |
| `pre-upgrade`                            | dropped                | `PreSync`              |
| `post-install`                           | `PostSync`             | dropped                |
| `post-upgrade`                           | dropped                | `PostSync`             |
| `pre/post-delete`, `pre/post-rollback`   | dropped                | dropped                |
| `test`, `test-success`                   | dropped                | dropped                |
| `helm.sh/hook-weight: N`                 | `argocd.argoproj.io/sync-wave: N`               |
| `helm.sh/hook-delete-policy`             | `argocd.argoproj.io/hook-delete-policy`         |

Delete policies: `before-hook-creation` → `BeforeHookCreation`, `hook-succeeded` →
`HookSucceeded`, `hook-failed` → `HookFailed`.

A hook listing several events keeps the first phase that applies (`pre-install,pre-upgrade`
is `PreSync` on every sync). Helm's own annotations stay on the object.

Argo CD's mapping (`every_sync`, an Argo CD Application's Helm source): Argo CD renders
with `helm template` and knows no install from upgrade, so `pre-install` and `pre-upgrade`
are `PreSync`, `post-install` and `post-upgrade` `PostSync`, on every sync; a hook runs in
each phase its events name, and `argocd.argoproj.io/hook` wins over Helm's (`argo_reading`,
which also reads Argo CD Applications' plain manifests).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

import yaml

HELM_HOOK: Final = "helm.sh/hook"
HELM_WEIGHT: Final = "helm.sh/hook-weight"
HELM_DELETE: Final = "helm.sh/hook-delete-policy"
ARGO_HOOK: Final = "argocd.argoproj.io/hook"
ARGO_WAVE: Final = "argocd.argoproj.io/sync-wave"
ARGO_DELETE: Final = "argocd.argoproj.io/hook-delete-policy"


class HookPhase(StrEnum):
    PRE_SYNC = "PreSync"
    POST_SYNC = "PostSync"


_INSTALL: Final = {"pre-install": HookPhase.PRE_SYNC, "post-install": HookPhase.POST_SYNC}
_UPGRADE: Final = {"pre-upgrade": HookPhase.PRE_SYNC, "post-upgrade": HookPhase.POST_SYNC}
_DELETE_POLICIES: Final = {
    "before-hook-creation": "BeforeHookCreation",
    "hook-succeeded": "HookSucceeded",
    "hook-failed": "HookFailed",
}
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def phase_of(hook: str, *, is_install: bool) -> HookPhase | None:
    """The phase of a hook with events `hook` (comma-separated) in Helm's install or upgrade,
    None: not run now (Argo CD's reading: `argo_reading`)."""
    table = _INSTALL if is_install else _UPGRADE
    for event in (e.strip() for e in hook.split(",")):
        if event in table:
            return table[event]
    return None


def translate_object(
    obj: dict[str, Any], *, is_install: bool, every_sync: bool = False
) -> dict[str, Any] | None:
    """`obj` with Argo CD's hook annotations for its Helm hook; None when it is a hook that
    does not run on this sync; `obj` itself when it is no hook. `every_sync`: Argo CD's
    reading (`argo_reading`)."""
    if every_sync:
        return argo_reading(obj)
    md = obj.get("metadata")
    annotations = md.get("annotations") if isinstance(md, dict) else None
    if not isinstance(annotations, dict) or HELM_HOOK not in annotations:
        return obj
    assert isinstance(md, dict)
    phase = phase_of(str(annotations[HELM_HOOK]), is_install=is_install)
    if phase is None:
        return None
    added: dict[str, str] = {ARGO_HOOK: str(phase), **_delete_policies(annotations)}
    weight = annotations.get(HELM_WEIGHT)
    if weight is not None and ARGO_WAVE not in annotations:
        added[ARGO_WAVE] = str(weight).strip()
    return {**obj, "metadata": {**md, "annotations": {**annotations, **added}}}


def argo_reading(obj: dict[str, Any]) -> dict[str, Any] | None:
    """Helm's annotations on any manifest of an Argo CD Application, read as Argo CD reads
    them (gitops-engine's hook and syncwaves packages): `helm.sh/hook` makes a hook unless
    `argocd.argoproj.io/hook` is there (Argo CD's wins); its install and upgrade events are
    PreSync and PostSync on every sync (each phase it names), and a hook of no such event
    is never applied (None; `crd-install` is no hook at all). `helm.sh/hook-weight` is the
    sync wave of any object without `argocd.argoproj.io/sync-wave`."""
    md = obj.get("metadata")
    annotations = md.get("annotations") if isinstance(md, dict) else None
    if not isinstance(annotations, dict) or (
        HELM_HOOK not in annotations and HELM_WEIGHT not in annotations
    ):
        return obj
    assert isinstance(md, dict)
    added: dict[str, str] = {}
    weight = str(annotations.get(HELM_WEIGHT, "")).strip()
    if ARGO_WAVE not in annotations and weight.lstrip("+-").isdigit():
        added[ARGO_WAVE] = str(int(weight))
    hook = str(annotations.get(HELM_HOOK, "")).strip()
    if hook and hook != "crd-install" and ARGO_HOOK not in annotations:
        table = {**_INSTALL, **_UPGRADE}
        phases = dict.fromkeys(table[e] for e in (e.strip() for e in hook.split(",")) if e in table)
        if not phases:
            return None
        added[ARGO_HOOK] = ",".join(phases)
        added.update(_delete_policies(annotations))
    if not added:
        return obj
    return {**obj, "metadata": {**md, "annotations": {**annotations, **added}}}


def _delete_policies(annotations: dict[str, Any]) -> dict[str, str]:
    policies = [
        _DELETE_POLICIES[p.strip()]
        for p in str(annotations.get(HELM_DELETE, "")).split(",")
        if p.strip() in _DELETE_POLICIES
    ]
    return {ARGO_DELETE: ",".join(policies)} if policies else {}


def translate_hooks(text: str, *, is_install: bool, every_sync: bool = False) -> str:
    """A rendered template with its hooks translated (and those not run now left out).
    Text without a Helm hook comes back as it is, unparsed."""
    if HELM_HOOK not in text:
        return text
    docs = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    out = []
    for doc in docs:
        if not isinstance(doc, dict):
            out.append(doc)
            continue
        kept = translate_object(doc, is_install=is_install, every_sync=every_sync)
        if kept is not None:
            out.append(kept)
    return yaml.dump_all(out, Dumper=_Dumper, sort_keys=False) if out else ""
