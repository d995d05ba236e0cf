"""The engine reports how far a long sync got: phase, then writes done of total per batch."""

from __future__ import annotations

from gitkrm.sync.progress import CHUNK
from tests.sync.conftest import EngineFactory
from tests.sync.sync_helpers import snapshot


def configmaps(n: int) -> str:
    return "".join(
        f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}, namespace: default}}\n"
        f"data: {{i: '{i}'}}\n"
        for i in range(n)
    )


async def test_applying_and_pruning_report_done_of_total(make_engine: EngineFactory) -> None:
    n = 2 * CHUNK + 200
    engine = make_engine()
    seen: list[tuple[str, int | None, int | None]] = []

    def hear(phase: str, done: int | None, total: int | None) -> None:
        seen.append((phase, done, total))

    result = await engine.sync(snapshot({"cms.yaml": configmaps(n)}, "r1"), progress=hear)
    assert result.ok, result.errors
    phases = [p for p, _, _ in seen]
    assert phases[:2] == ["rendering", "planning"]
    applying = [(d, t) for p, d, t in seen if p == "applying"]
    assert applying == [(0, n), (CHUNK, n), (2 * CHUNK, n), (n, n)]

    seen.clear()
    kept = CHUNK // 2
    r2 = snapshot({"cms.yaml": configmaps(kept)}, "r2")
    r2.allow_prune = n - kept  # more than the prune budget: approved, as by a commit trailer
    result = await engine.sync(r2, progress=hear)
    assert result.ok, result.errors
    assert ("pruning", 0, n - kept) in seen
    assert seen[-1] == ("pruning", n - kept, n - kept)
    assert not [s for s in seen if s[0] == "applying"]  # nothing left to write
