"""`gitkrm plan --simulate`: a dry run of revisions on a throwaway twin of the embedded
store, with the bundled controllers running on it (docs/plan.md, "Simulation").

`twin.simulate` runs it, `verdict` holds what it predicts, `output` prints it.
"""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
    from .output import markdown_lines, skipped, text_lines, to_json, to_text
    from .twin import DEFAULT_BUDGET, SIMULATION_CONTROLLERS, SimSource, simulate
    from .verdict import Simulation

__getattr__ = exports(
    __name__,
    {
        "DEFAULT_BUDGET": ".twin",
        "SIMULATION_CONTROLLERS": ".twin",
        "SimSource": ".twin",
        "Simulation": ".verdict",
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
    "markdown_lines",
    "simulate",
    "skipped",
    "text_lines",
    "to_json",
    "to_text",
]
