"""Argo CD objects for the interpreter's tests (written here in Argo CD's documented shape)."""

from __future__ import annotations

import base64
from typing import Any

from gitkrm.krm import Obj


def application(
    name: str = "guestbook",
    namespace: str = "argocd",
    *,
    finalizers: list[str] | None = None,
    source: dict[str, Any] | None = None,
    **spec: Any,
) -> Obj:
    base: dict[str, Any] = {
        "project": "default",
        "source": source
        if source is not None
        else {"repoURL": "https://github.com/example/fleet.git", "path": "apps/guestbook",
              "targetRevision": "HEAD"},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
        "syncPolicy": {"automated": {"prune": True, "selfHeal": True}},
    }  # fmt: skip
    base.update(spec)
    md: dict[str, Any] = {"name": name, "namespace": namespace, "generation": 2}
    if finalizers is not None:
        md["finalizers"] = finalizers
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": md,
        "spec": {k: v for k, v in base.items() if v is not None},
    }


def repo_secret(
    name: str, url: str, *, type_: str = "repository", namespace: str = "argocd", **data: str
) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"argocd.argoproj.io/secret-type": type_},
        },
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in {"url": url, **data}.items()},
    }
