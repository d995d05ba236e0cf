"""The one door to Helm: `helm_python` (Helm v4's Go SDK in the `gitkrm[helm]` wheel).

Imported on first use only (0.05 s and an 85 MB library: `gitkrm --help` and a source
without charts never load it). Helm's errors become `ChartError`s naming the chart, the
template and Helm's own message.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from gitkrm.errors import BadRequest

if TYPE_CHECKING:
    import helm_python

EXTRA_HINT = "install gitkrm with the helm extra: pip install 'gitkrm[helm]'"


class ChartError(BadRequest):
    """A chart that can't be rendered: its directory, and Helm's message."""

    def __init__(self, chart: str, message: str) -> None:
        super().__init__(message)
        self.chart = chart


def helm(chart: str = "") -> ModuleType:
    """`helm_python`, or a ChartError naming the extra that brings it."""
    try:
        import helm_python as module
    except ImportError:
        raise ChartError(chart, f"rendering a Helm chart needs Helm: {EXTRA_HINT}") from None
    return module


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """What `.Release` and `.Capabilities` say during one render."""

    name: str
    namespace: str
    is_install: bool
    kube_version: str
    api_versions: tuple[str, ...] = ()
    revision: int = 1
    strict: bool = False  # a missing key is an error (Go's missingkey=error), not empty

    def to_json(self) -> str:
        return json.dumps(
            {
                "name": self.name,
                "namespace": self.namespace,
                "revision": self.revision,
                "is_install": self.is_install,
                "is_upgrade": not self.is_install,
                "kube_version": self.kube_version,
                "api_versions": list(self.api_versions),
                "strict": self.strict,
            }
        )


def load_archive(data: bytes, *, chart: str) -> helm_python.Chart:
    h = helm(chart)
    try:
        loaded: helm_python.Chart = h.Chart.load_archive(data)
    except h.HelmError as e:
        raise ChartError(chart, f"Helm could not load the chart: {_message(e)}") from None
    return loaded


def render(
    loaded: helm_python.Chart, values: dict[str, Any], options: RenderOptions, *, chart: str
) -> dict[str, str]:
    """Template path -> rendered text. The binding's `Chart.render` has no keywords for the
    capabilities; its native call takes them in the same options document."""
    h = helm(chart)
    from helm_python import _native

    try:
        out: dict[str, str] = json.loads(
            _native.call_string("helm_render", loaded._raw(), json.dumps(values), options.to_json())
        )
    except h.HelmValuesError as e:
        raise ChartError(chart, f"values rejected by Helm: {_message(e)}") from None
    except h.HelmError as e:
        raise ChartError(chart, f"Helm could not render the chart: {_message(e)}") from None
    return out


def crds(loaded: helm_python.Chart) -> list[dict[str, str]]:
    """The files under `crds/` (the chart's and its subcharts'): name, filename, data."""
    found: list[dict[str, str]] = loaded.crds
    return found


def metadata(loaded: helm_python.Chart) -> dict[str, Any]:
    meta: dict[str, Any] = loaded.metadata
    return meta


def parse_sets(expressions: Sequence[str], *, chart: str) -> list[dict[str, Any]]:
    """Helm's own parser of `--set` expressions, its integers kept printable (`_exact`)."""
    h = helm(chart)
    out: list[dict[str, Any]] = []
    for e in expressions:
        try:
            out.append(_exact(h.parse_set_string(e)))
        except h.HelmError as err:
            raise ChartError(chart, f"--set {e!r}: {_message(err)}") from None
    return out


_EXPONENT_FROM: Final = 10**6


def _exact(value: Any) -> Any:
    """`helm --set x=20240101` makes an int64, printed as written; the values reach the
    renderer as JSON, whose numbers are float64, printed from a million on as 2.0240101e+07:
    such an integer goes as its digits (sprig's `int`, `add` and `quote` read them alike)."""
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_exact(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _EXPONENT_FROM:
        return str(value)
    return value


def _message(e: Exception) -> str:
    return " ".join(str(e).split())  # Helm's multi-line messages on one line
