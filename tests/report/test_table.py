from __future__ import annotations

from gitkrm.health import Health, HealthResult
from gitkrm.report.table import health_table, live_rows
from tests.report.report_helpers import CURRENT, deployment, service


def test_table_is_aligned_and_the_message_is_last() -> None:
    rows = live_rows(
        "default",
        {
            deployment("web"): HealthResult(Health.IN_PROGRESS, "Available: 1/3\nwaiting", "Less"),
            service("a-long-name"): CURRENT,
        },
    )
    text = health_table(rows)
    lines = text.splitlines()
    assert lines[0].split() == ["SOURCE", "NAMESPACE", "KIND", "NAME", "HEALTH", "MESSAGE"]
    assert lines[1].split() == ["default", "default", "Service", "a-long-name", "Current"]
    assert lines[2].endswith("InProgress   Available: 1/3 waiting")
    assert lines[0].index("HEALTH") == lines[2].index("InProgress")
