"""gitkrm.health: kstatus-style health of objects (pure functions) and waiting for it.

The same rules judge objects of the embedded target and of a cluster; see docs/controllers.md.
"""

from gitkrm.health.compute import health_of
from gitkrm.health.result import Health, HealthResult, aggregate
from gitkrm.health.wait import WaitResult, wait_for

__all__ = ["Health", "HealthResult", "WaitResult", "aggregate", "health_of", "wait_for"]
