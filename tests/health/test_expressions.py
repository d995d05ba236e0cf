"""healthCheckExprs (Flux's shape) deciding the health of custom kinds: order of the
expressions, kstatus' generic checks first, errors, and kinds they don't name."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import BadRequest
from gitkrm.health import Health, HealthChecks, health_of

EXPRS = [
    {
        "apiVersion": "example.com/v1",
        "kind": "Database",
        "inProgress": "status.phase == 'Provisioning'",
        "failed": "status.conditions.exists(c, c.type == 'Ready' && c.status == 'False')",
        "current": "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
    }
]


def database(phase: str = "", ready: str | None = None, **meta: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase} if phase else {}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {
        "apiVersion": "example.com/v1",
        "kind": "Database",
        "metadata": {"name": "db", "namespace": "default", **meta},
        "status": status,
    }


@pytest.fixture(scope="module")
def checks() -> HealthChecks:
    found = HealthChecks.from_spec(EXPRS)
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (database(ready="True"), Health.CURRENT),
        (database(ready="False"), Health.FAILED),
        (database(phase="Provisioning", ready="False"), Health.IN_PROGRESS),  # inProgress first
        (database(ready="Unknown"), Health.IN_PROGRESS),  # none true
        (database(), Health.IN_PROGRESS),  # no conditions yet: an error, not a verdict
        (database(ready="True", generation=2) | {"status": {"observedGeneration": 1,
          "conditions": [{"type": "Ready", "status": "True"}]}}, Health.IN_PROGRESS),
    ],
)  # fmt: skip
def test_expressions_decide_in_fluxs_order(
    checks: HealthChecks, obj: dict[str, Any], expected: Health
) -> None:
    assert health_of(obj, checks=checks).status is expected


def test_without_expressions_kstatus_reads_only_standard_conditions() -> None:
    # A Ready=False condition is kstatus' InProgress; the failed expression makes it Failed.
    assert health_of(database(ready="False")).status is Health.IN_PROGRESS


def test_other_kinds_keep_their_rules(checks: HealthChecks) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert health_of(cm, checks=checks).status is Health.CURRENT


def test_a_bad_expression_is_a_configuration_error() -> None:
    with pytest.raises(BadRequest, match=r"spec.healthCheckExprs\[0\].current \(Database\)"):
        HealthChecks.from_spec([{**EXPRS[0], "current": "status.phase =="}])
    with pytest.raises(BadRequest, match="current required"):
        HealthChecks.from_spec([{"apiVersion": "v1", "kind": "X"}])
