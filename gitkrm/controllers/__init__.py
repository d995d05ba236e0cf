"""gitkrm.controllers: the bundled controllers of the embedded target (see docs/controllers.md).

The ControllerManager runs them all against one store: a small Kubernetes control plane
(deployments, replica sets, stateful sets, daemon sets, jobs, cron jobs, services and their
endpoints, storage, scheduling, garbage collection, namespaces) with simulated nodes.
"""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
    from gitkrm.controllers.manager import CONTROLLERS, ControllerManager
    from gitkrm.controllers.options import ControllerOptions

__getattr__ = exports(
    __name__,
    {
        "CONTROLLERS": ".manager",
        "ControllerManager": ".manager",
        "ControllerOptions": ".options",
    },
)

__all__ = [
    "CONTROLLERS",
    "ControllerManager",
    "ControllerOptions",
]
