"""The Helm sources of Argo CD Applications: `spec.source.chart` (a chart of a Helm
repository, `repoURL` the repository) and `spec.source.helm` (values for a chart in Git).
They come with issue #21 (Helm releases); until then `helm_source` refuses them, and the
Application's status says so. A Git path holding a `Chart.yaml` without `helm` options
already renders (its release named after the Application, as Argo CD names it).

The hook for #21: `argocd.read` calls `helm_source` for any source with `chart` or
`helm`; it returns the child's `SourceConfig` fields (`url`, `ref`, `path`, `helm`, ...)
to lay over the Git ones, or raises the error naming the field."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gitkrm.krm import Obj

from .argocd_spec import Source

Fail = Callable[[str, str], Exception]


async def helm_source(obj: Obj, source: Source, *, at: str, fail: Fail) -> Mapping[str, Any]:
    """The child's configuration for a Helm source of `obj` (`at`: the source's field)."""
    if source.get("chart"):
        raise fail(f"{at}.chart", "Helm sources of Applications come with issue #21")
    raise fail(f"{at}.helm", "Helm options of Applications come with issue #21")
