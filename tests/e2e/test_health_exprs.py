"""GitSource `spec.healthCheckExprs` decide `gitkrm run --once --wait` for a custom kind that
kstatus cannot read: Failed ends the wait at once (exit 1), Current lets it succeed, and the
GitSource's status counts the verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.e2e_support import gitkrm, gitsource_status, reading
from tests.e2e.manifests import gitsource, namespace
from tests.source.source_gitrepo import RemoteRepo
from tests.support.builders import crd

CRD = yaml.safe_dump(
    crd(
        "Database",
        "health.example.com",
        status_subresource=False,
        schema={"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    ),
    sort_keys=False,
)

DATABASE = """\
apiVersion: health.example.com/v1
kind: Database
metadata: {{name: orders, namespace: shop}}
status: {{phase: {phase}}}
"""

EXPRS = [
    {
        "apiVersion": "health.example.com/v1",
        "kind": "Database",
        "current": "status.phase == 'Running'",
        "failed": "status.phase == 'Error'",
    }
]


def _run(repo: RemoteRepo, state: Path, tmp_path: Path, *, exprs: bool) -> tuple[int, str]:
    config = tmp_path / "sources.yaml"
    spec = {"healthCheckExprs": EXPRS} if exprs else {}
    config.write_text(gitsource("default", repo.url, **spec))
    res = gitkrm(
        "run", "--config", str(config), "--state", str(state), "--once", "--wait",
        "--timeout", "30s", cwd=tmp_path,
    )  # fmt: skip
    return res.returncode, res.stdout + res.stderr


def _commit(repo: RemoteRepo, phase: str) -> None:
    repo.write("ns.yaml", namespace("shop"))
    repo.write("crd.yaml", CRD)
    repo.write("db.yaml", DATABASE.format(phase=phase))
    repo.commit(f"a database {phase}")
    repo.push()


async def test_a_failed_expression_fails_the_wait(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    _commit(repo, "Error")
    code, out = _run(repo, state, tmp_path, exprs=True)
    assert code == 1, out
    assert "Failed" in out
    assert "shop/orders" in out
    assert "timed out" not in out
    async with reading(state) as store:
        health = (await gitsource_status(store))["health"]
    assert health["status"] == "Failed"


@pytest.mark.parametrize(
    ("phase", "exprs"),
    [("Running", True), ("Error", False)],
    ids=["the-current-expression-ends-the-wait", "without-expressions-kstatus-reads-it-current"],
)
async def test_an_object_read_as_current_ends_the_wait(
    repo: RemoteRepo, state: Path, tmp_path: Path, phase: str, exprs: bool
) -> None:
    """With the expressions, phase Running is Current; without them kstatus calls the same
    object Current whatever its phase (it cannot read the kind)."""
    _commit(repo, phase)
    code, out = _run(repo, state, tmp_path, exprs=exprs)
    assert code == 0, out
    assert "object(s) are Current" in out
