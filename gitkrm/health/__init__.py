"""gitkrm.health: kstatus-style health of objects (pure functions) and waiting for it.

The same rules judge objects of the embedded target and of a cluster; see docs/controllers.md.
"""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
    from gitkrm.health.compute import health_of
    from gitkrm.health.expressions import HealthChecks
    from gitkrm.health.result import Health, HealthResult, aggregate
    from gitkrm.health.wait import WaitResult, wait_for

__getattr__ = exports(
    __name__,
    {
        "Health": ".result",
        "HealthChecks": ".expressions",
        "HealthResult": ".result",
        "WaitResult": ".wait",
        "aggregate": ".result",
        "health_of": ".compute",
        "wait_for": ".wait",
    },
)

__all__ = [
    "Health",
    "HealthChecks",
    "HealthResult",
    "WaitResult",
    "aggregate",
    "health_of",
    "wait_for",
]
