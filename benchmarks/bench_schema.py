"""Schema figures: validation of W10k Deployments, and full admission of W10k objects.

`schema.validate_10k_deployments` is the jsonschema-rs check alone (target <= 0.05 s);
`schema.admit_*` is `Registry.admit` (unknown-field check, defaults, API rules, metadata)
on fresh objects, as the store runs it before every write (the store's 10,000-create batch
must stay under 0.5 s in total, so admit should cost well under 25 us per object).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.workload import deployment, objects, service
from gitkrm.krm.refs import GVK
from gitkrm.schema import Registry
from gitkrm.schema.openapi import definition_name
from gitkrm.schema.validation import check, compile_kind

RUNS = 7
COUNT = 10_000


def _median(run: Callable[[], float], runs: int = RUNS) -> float:
    return statistics.median(run() for _ in range(runs))


def _timed(objs: list[dict[str, Any]], fn: Callable[[dict[str, Any]], object]) -> float:
    gc.disable()
    try:
        start = time.perf_counter()
        for obj in objs:
            fn(obj)
        return time.perf_counter() - start
    finally:
        gc.enable()


def _line(name: str, value: str, target: str) -> None:
    print(f"{name:<36} {value:>18}  ({target})", flush=True)


def main() -> None:
    registry = Registry.builtin()
    definition = definition_name(GVK(group="apps", version="v1", kind="Deployment"))
    assert definition is not None
    compile_kind(definition)
    deployments = [deployment(i) for i in range(COUNT)]

    def validate() -> float:
        return _timed(deployments, lambda o: check(definition, o))

    seconds = _median(validate)
    _line("schema.validate_10k_deployments", f"{seconds:.4f} s", "target <= 0.05 s")

    def admit_fresh(make: Callable[[], list[dict[str, Any]]]) -> Callable[[], float]:
        def run() -> float:
            objs = make()
            return _timed(objs, registry.admit)

        return run

    registry.admit(deployment(0))
    registry.admit(service(0))
    for name, make, count in (
        ("schema.admit_w10k_mixed", lambda: objects(COUNT // 2), COUNT),
        ("schema.admit_deployment", lambda: [deployment(i) for i in range(COUNT)], COUNT),
        ("schema.admit_service", lambda: [service(i) for i in range(COUNT)], COUNT),
    ):
        seconds = _median(admit_fresh(make), runs=5)
        _line(name, f"{seconds / count * 1e6:.1f} us/object", "target well under 25 us/object")
        if name == "schema.admit_w10k_mixed":
            _line("schema.admit_w10k_total", f"{seconds:.3f} s", "store batch total <= 0.5 s")

    defaulted = objects(COUNT // 2)
    for obj in defaulted:
        registry.admit(obj)
    seconds = _median(lambda: _timed(defaulted, registry.admit), runs=5)
    _line(
        "schema.admit_w10k_already_defaulted",
        f"{seconds / COUNT * 1e6:.1f} us/object",
        "updates of stored objects",
    )


if __name__ == "__main__":
    main()
