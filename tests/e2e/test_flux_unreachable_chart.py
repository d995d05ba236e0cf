"""`run --once --wait --timeout` over a Flux monitoring-stack layout whose chart registry is
out of reach: a `controllers` Kustomization (`wait: true`, `timeout: 10m`) holding an
OCIRepository and the HelmRelease over it, and a `configs` Kustomization that depends on
it. The chart can't be fetched, so the HelmRelease never gets Ready and `controllers`
never gets healthy.

What a Flux user must see: the run ends at `--timeout`, not after the Kustomization's
ten minutes (before, `--timeout 1m` ran ten); the HelmRelease is `SourceNotReady` naming
its OCIRepository, with no release in its history (before: "Helm install failed ... with
chart stack@"); `controllers` is Ready=False `HealthCheckFailed` naming the HelmRelease
(before: "Health check passed", read before the HelmRelease had a status); what does not
depend on the chart (the namespace, the ConfigMap beside the release) is applied."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from gitkrm.krm.conditions import find_condition
from tests.e2e.e2e_support import object_ref, read_each, run_tree
from tests.e2e.manifests import configmap, kustomization, namespace
from tests.source.source_gitrepo import RemoteRepo

SOURCES = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: stack, namespace: monitoring}
spec:
  interval: 1h
  url: oci://127.0.0.1:1/charts/stack
  ref: {semver: "69.x"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: stack, namespace: monitoring}
spec:
  interval: 1h
  chartRef: {kind: OCIRepository, name: stack}
  values: {retention: 24h}
"""


def _ready(obj: dict[str, Any] | None) -> tuple[str, str, str]:
    assert obj is not None
    c = find_condition((obj.get("status") or {}).get("conditions"), "Ready")
    assert c is not None, obj.get("status")
    return str(c["status"]), str(c["reason"]), str(c["message"])


def _write(repo: RemoteRepo, *, timeout: str = "10m", dependents: int = 1) -> None:
    repo.write("clusters/test/ns.yaml", namespace("flux-system"))
    repo.write(
        "clusters/test/monitoring.yaml",
        "---\n".join(
            [kustomization("controllers", "./monitoring/controllers", timeout=timeout)]
            + [
                kustomization(n, "./monitoring/configs", depends_on=("controllers",))
                for n in ("configs", "alerts")[:dependents]
            ]
        ),
    )
    repo.write("monitoring/controllers/namespace.yaml", namespace("monitoring"))
    repo.write(
        "monitoring/controllers/settings.yaml",
        configmap("stack-settings", {"a": "1"}, namespace="monitoring"),
    )
    repo.write("monitoring/controllers/release.yaml", SOURCES)
    repo.write("monitoring/configs/dashboards.yaml",
               configmap("dashboards", {"b": "2"}, namespace="monitoring"))  # fmt: skip
    repo.commit("monitoring")
    repo.push()


async def test_an_unreachable_chart_ends_at_the_timeout_with_the_source_named(
    repo: RemoteRepo, state: Path
) -> None:
    _write(repo)
    started = time.monotonic()
    res = run_tree(
        repo.url, state, "--wait", "--timeout", "8s", path="clusters/test", interpret="flux"
    )
    took = time.monotonic() - started
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert took < 90, f"took {took:.0f}s: the Kustomization's 10m was waited, not --timeout"
    assert "timed out after 8s" in res.stdout, out
    assert "waiting for Kustomization flux-system/controllers" in res.stdout, out
    release, controllers, beside, dependent = await read_each(
        state,
        object_ref("HelmRelease", "stack", "monitoring", "helm.toolkit.fluxcd.io"),
        object_ref("Kustomization", "controllers", "flux-system", "kustomize.toolkit.fluxcd.io"),
        object_ref("ConfigMap", "stack-settings", "monitoring"),
        object_ref("ConfigMap", "dashboards", "monitoring"),
    )
    status, reason, message = _ready(release)
    assert (status, reason) == ("False", "SourceNotReady"), message
    assert message.startswith("OCIRepository 'monitoring/stack' is not ready: "), message
    assert "127.0.0.1:1" in message
    assert release is not None
    assert "history" not in release["status"]
    status, reason, message = _ready(controllers)
    assert (status, reason) == ("False", "HealthCheckFailed"), message
    assert "HelmRelease" in message, message
    assert "monitoring/stack" in message, message
    assert beside is not None  # what does not depend on the chart is applied
    assert dependent is None  # configs waits for controllers, as in Flux


def _stamp(log: str, text: str) -> datetime:
    line = next(x for x in log.splitlines() if text in x)
    return datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00"))


async def test_a_dependency_whose_health_ran_out_is_not_waited_out_again_per_dependent(
    repo: RemoteRepo, state: Path
) -> None:
    # Two Kustomizations depend on `controllers`: once its wait on health ran out (its
    # `timeout`, 12s), it is not Ready (Flux: Ready=False HealthCheckFailed) and the
    # second dependent knows it at once (before, each waited the whole timeout again).
    _write(repo, timeout="12s", dependents=2)
    res = run_tree(repo.url, state, path="clusters/test", interpret="flux")
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    waits = "waits for Kustomization flux-system/controllers"
    waited = [x for x in res.stderr.splitlines() if waits in x]
    assert len(waited) == 2, out
    gap = _stamp(waited[1], waits) - _stamp(waited[0], waits)
    assert gap.total_seconds() < 6, out


async def test_the_wait_after_a_tree_says_the_time_left_in_whole_seconds(
    repo: RemoteRepo, state: Path
) -> None:
    repo.write("clusters/test/cm.yaml", configmap("plain", {"a": "1"}))
    repo.commit("plain")
    repo.push()
    res = run_tree(
        repo.url, state, "--wait", "--timeout", "1m", path="clusters/test", interpret="flux"
    )
    assert res.returncode == 0, res.stdout + res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("waiting up to "))
    left = line.split()[3]  # `--timeout` counts from the start: less than 1m is left
    assert left.endswith("s"), line
    assert "." not in left, line
