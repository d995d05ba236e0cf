"""CEL figures (issue 22): validation rules and admission policies, each measured side by side
with the same work without CEL in the same run (medians).

- cel.crd_rules_10k: admitting 10,000 custom resources (`Registry.admit`, the admission the
  store and the sync's validation share) whose CRD has three x-kubernetes-validations rules,
  against the same CRD without rules: CEL adds <= 0.3 s;
- cel.w10k_policy: a cold W10k sync (SyncEngine, in-process) into a store holding a
  ValidatingAdmissionPolicy (two validations and a variable) bound to every Deployment,
  against the same sync into a store without it: <= 1.3x.
"""

from __future__ import annotations

import asyncio
import copy
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.gitrepo import make_repo
from benchmarks.workload import APPS
from gitkrm.schema import Registry
from gitkrm.source import GitSource, GitSourceSpec
from gitkrm.store.sqlite import SqliteStore
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions

RUNS = 5
SYNC_RUNS = 3
OBJECTS = 10_000
RULES = [
    {"rule": "self.minReplicas <= self.maxReplicas", "message": "min above max"},
    {"rule": "self.name.startsWith('app-') && size(self.name) < 64"},
    {"rule": "self.ports.all(p, p.port > 0 && p.port < 65536)"},
]


def _crd(rules: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": "object",
        "properties": {
            "minReplicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "name": {"type": "string"},
            "ports": {
                "type": "array",
                "items": {"type": "object", "properties": {"port": {"type": "integer"}}},
            },
        },
    }
    if rules:
        spec["x-kubernetes-validations"] = rules
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "scalers.bench.example.com"},
        "spec": {
            "group": "bench.example.com",
            "scope": "Namespaced",
            "names": {"plural": "scalers", "kind": "Scaler"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }


def _scaler(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "bench.example.com/v1",
        "kind": "Scaler",
        "metadata": {"name": f"app-{i}", "namespace": f"team-{i % 20}"},
        "spec": {
            "minReplicas": 1,
            "maxReplicas": 3 + i % 5,
            "name": f"app-{i}",
            "ports": [{"port": 80}, {"port": 443}, {"port": 8080}],
        },
    }


def _admit_all(registry: Registry, objs: list[dict[str, Any]]) -> float:
    fresh = copy.deepcopy(objs)  # admission defaults in place: every run starts alike
    start = time.perf_counter()
    for obj in fresh:
        registry.admit(obj)
    return time.perf_counter() - start


def _rules_figures() -> tuple[float, float]:
    plain, ruled = Registry.builtin(), Registry.builtin()
    plain.register_crd(_crd([]))
    ruled.register_crd(_crd(RULES))
    objs = [_scaler(i) for i in range(OBJECTS)]
    _admit_all(ruled, objs[:10])  # compile the rules and import the runtime once
    without: list[float] = []
    with_rules: list[float] = []
    for _ in range(RUNS):
        without.append(_admit_all(plain, objs))
        with_rules.append(_admit_all(ruled, objs))
    return statistics.median(without), statistics.median(with_rules)


POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "deployments"},
    "spec": {
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["deployments"],
                }
            ]
        },
        "variables": [{"name": "containers", "expression": "object.spec.template.spec.containers"}],
        "validations": [
            {"expression": "object.spec.replicas <= 10", "message": "at most 10 replicas"},
            {
                "expression": "variables.containers.all(c, c.image.startsWith('nginx:'))",
                "messageExpression": "'images must be nginx'",
            },
        ],
    },
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "deployments"},
    "spec": {"policyName": "deployments", "validationActions": ["Deny"]},
}


async def _cold_sync(root: Path, bare: Path, name: str, *, policy: bool) -> float:
    source = GitSource(GitSourceSpec(name="bench", url=str(bare)), cache_dir=root / "cache")
    snap = await source.snapshot()
    store = SqliteStore.open(str(root / f"{name}.db"))
    if policy:
        await store.create(POLICY)
        await store.create(BINDING)
    engine = SyncEngine(store=store, options=SyncOptions(source_name="bench", agent_name="bench"))
    start = time.perf_counter()
    result = await engine.sync(snap)
    seconds = time.perf_counter() - start
    if not result.ok or result.counts["created"] != 2 * APPS + 20:
        raise SystemExit(f"sync failed: {result.problems()[:3]}")
    await engine.close()
    await store.close()
    await source.close()
    return seconds


async def _sync_figures(root: Path) -> tuple[float, float]:
    _, bare = make_repo(root)
    await _cold_sync(root, bare, "warm", policy=True)  # imports, compiled programs, page cache
    without: list[float] = []
    with_policy: list[float] = []
    for run in range(SYNC_RUNS):
        without.append(await _cold_sync(root, bare, f"plain-{run}", policy=False))
        with_policy.append(await _cold_sync(root, bare, f"policy-{run}", policy=True))
    return statistics.median(without), statistics.median(with_policy)


def _line(name: str, value: str, note: str) -> None:
    print(f"cel.{name:<30} {value:>14}  ({note})", flush=True)


def main() -> None:
    without, with_rules = _rules_figures()
    _line("crd_admit_10k_no_rules", f"{without:.3f} s", f"median of {RUNS}")
    _line("crd_admit_10k_3_rules", f"{with_rules:.3f} s", f"median of {RUNS}")
    _line("crd_rules_10k", f"+{with_rules - without:.3f} s", "CEL's cost, target <= 0.3 s")
    with tempfile.TemporaryDirectory() as tmp:
        plain, policed = asyncio.run(_sync_figures(Path(tmp)))
    _line("w10k_cold_no_policy", f"{plain:.3f} s", f"median of {SYNC_RUNS}")
    _line("w10k_cold_policy", f"{policed:.3f} s", f"median of {SYNC_RUNS}, side by side")
    _line("w10k_policy", f"{policed / plain:.2f} x", "target <= 1.3x")


if __name__ == "__main__":
    main()
