"""Which directories of a snapshot are charts (Argo CD's detection: a `Chart.yaml`).

A chart inside another chart (its `charts/` subcharts, or any deeper `Chart.yaml`) belongs
to the outer one; every file under a chart's directory belongs to the chart and is not read
as a plain manifest.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

CHART_FILE = "Chart.yaml"
LOCK_FILE = "Chart.lock"


@dataclass(frozen=True, slots=True)
class ChartLayout:
    """The chart directories of a snapshot (`""` is the source's root), outermost only."""

    roots: tuple[str, ...] = ()
    _set: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_set", frozenset(self.roots))

    def owned(self, path: str) -> bool:
        """Whether `path` lies under a chart's directory."""
        if not self.roots:
            return False
        if "" in self.roots:
            return True
        d = path
        while "/" in d:
            d = d.rpartition("/")[0]
            if d in self._set:
                return True
        return False

    def grouped(self, paths: Iterable[str]) -> dict[str, list[str]]:
        """Each chart's paths, relative to its directory, in one pass over `paths`."""
        out: dict[str, list[str]] = {r: [] for r in self.roots}
        if "" in out:
            out[""] = sorted(paths)
            return out
        for p in paths:
            d = p
            while "/" in d:
                d = d.rpartition("/")[0]
                if d in self._set:
                    out[d].append(p[len(d) + 1 :])
                    break
        for files in out.values():
            files.sort()
        return out

    def files_of(self, root: str, paths: Iterable[str]) -> list[str]:
        """The paths under `root`, relative to it."""
        if not root:
            return sorted(paths)
        prefix = root + "/"
        return sorted(p[len(prefix) :] for p in paths if p.startswith(prefix))


def chart_layout(paths: Iterable[str]) -> ChartLayout:
    """The outermost directories holding a `Chart.yaml`."""
    dirs = sorted(
        p.rpartition("/")[0] for p in paths if p == CHART_FILE or p.endswith("/" + CHART_FILE)
    )
    roots: list[str] = []
    for d in dirs:  # sorted: an outer directory comes before what is under it
        if any(r == "" or d.startswith(r + "/") for r in roots):
            continue
        roots.append(d)
    return ChartLayout(tuple(roots))
