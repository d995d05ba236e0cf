"""gitkrm.sync: render, validate, plan and apply a source's revisions into a store.

`SyncEngine(store=..., options=SyncOptions(...))` is the entry point (see `engine`);
`validate_paths` is the offline check behind `gitkrm validate`; `redact.redact` hides Secret
data wherever objects are shown.
"""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
    from gitkrm.sync.engine import SyncEngine
    from gitkrm.sync.options import AdoptionPolicy, IgnoreDifference, SyncOptions
    from gitkrm.sync.plan import Op, Plan, Step
    from gitkrm.sync.problems import Problem
    from gitkrm.sync.redact import redact_pair
    from gitkrm.sync.render import RenderResult
    from gitkrm.sync.results import Action, ObjectResult, SyncResult, SyncStatus
    from gitkrm.sync.validate import Report, validate_paths, validate_tree

__getattr__ = exports(
    __name__,
    {
        "Action": ".results",
        "AdoptionPolicy": ".options",
        "IgnoreDifference": ".options",
        "ObjectResult": ".results",
        "Op": ".plan",
        "Plan": ".plan",
        "Problem": ".problems",
        "RenderResult": ".render",
        "Report": ".validate",
        "Step": ".plan",
        "SyncEngine": ".engine",
        "SyncOptions": ".options",
        "SyncResult": ".results",
        "SyncStatus": ".results",
        "redact_pair": ".redact",
        "validate_paths": ".validate",
        "validate_tree": ".validate",
    },
)

__all__ = [
    "Action",
    "AdoptionPolicy",
    "IgnoreDifference",
    "ObjectResult",
    "Op",
    "Plan",
    "Problem",
    "RenderResult",
    "Report",
    "Step",
    "SyncEngine",
    "SyncOptions",
    "SyncResult",
    "SyncStatus",
    "redact_pair",
    "validate_paths",
    "validate_tree",
]
