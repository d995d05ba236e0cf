"""`gitkrm plan --simulate`: a dry run of revisions on a throwaway twin of the embedded
store, with the bundled controllers running on it (docs/plan.md, "Simulation").

`twin.simulate` runs it, `verdict` holds what it predicts, `output` prints it.
"""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
    from .output import markdown_lines, skipped, text_lines, to_json, to_text
    from .twin import DEFAULT_BUDGET, SIMULATION_CONTROLLERS, SimSource, Twin, open_twin, simulate
    from .verdict import Simulation, for_source

__getattr__ = exports(
    __name__,
    {
        "DEFAULT_BUDGET": ".twin",
        "SIMULATION_CONTROLLERS": ".twin",
        "SimSource": ".twin",
        "Simulation": ".verdict",
        "Twin": ".twin",
        "for_source": ".verdict",
        "open_twin": ".twin",
        "simulate": ".twin",
        "markdown_lines": ".output",
        "skipped": ".output",
        "text_lines": ".output",
        "to_json": ".output",
        "to_text": ".output",
    },
)

__all__ = [
    "DEFAULT_BUDGET",
    "SIMULATION_CONTROLLERS",
    "SimSource",
    "Simulation",
    "Twin",
    "for_source",
    "markdown_lines",
    "open_twin",
    "simulate",
    "skipped",
    "text_lines",
    "to_json",
    "to_text",
]
