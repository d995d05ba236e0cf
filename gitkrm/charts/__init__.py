"""gitkrm.charts: Helm charts rendered by Helm itself (the `gitkrm[helm]` extra).

A directory with a `Chart.yaml` inside a source's path is a chart (`layout`); it is packed
from the snapshot into an archive in memory (`archive`), rendered by Helm v4's Go SDK
through `helm_python` (`library`, the only module that imports it) with the values, release
and capabilities a `HelmSpec` (`spec`) and the target give (`release`), and its Helm hooks
become the sync phases' annotations (`hooks`). Below `sync` (which parses and applies what
it renders), above `health`; no store, no Git: data in, rendered manifests out.
"""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
    from gitkrm.charts.hooks import HookPhase, translate_hooks
    from gitkrm.charts.layout import ChartLayout, chart_layout
    from gitkrm.charts.model import Capabilities, Release, RenderedRelease
    from gitkrm.charts.release import ChartRenderer
    from gitkrm.charts.spec import HelmSpec

__getattr__ = exports(
    __name__,
    {
        "Capabilities": ".model",
        "ChartLayout": ".layout",
        "ChartRenderer": ".release",
        "HelmSpec": ".spec",
        "HookPhase": ".hooks",
        "Release": ".model",
        "RenderedRelease": ".model",
        "chart_layout": ".layout",
        "translate_hooks": ".hooks",
    },
)

__all__ = [
    "Capabilities",
    "ChartLayout",
    "ChartRenderer",
    "HelmSpec",
    "HookPhase",
    "Release",
    "RenderedRelease",
    "chart_layout",
    "translate_hooks",
]
