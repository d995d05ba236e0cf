"""`gitkrm plan --simulate [--for DUR]`: each planned source applied to a twin of the
embedded store with the bundled controllers running (`gitkrm.agent.simulate`), its
predicted outcome added to the source's plan as its `simulation` section.

Not on the cluster target: a twin of a cluster would need its nodes, bound pods, quotas
and policies copied first (a later issue), so the command refuses with exit 2."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Final

from gitkrm.errors import BadRequest

if TYPE_CHECKING:
    from .plan_report import SourcePlan
    from .sourcerun import Opened

MAX_BUDGET: Final = 3600.0
NOT_ON_A_CLUSTER: Final = (
    "--simulate is not available on the cluster target yet: a twin of a cluster would "
    "need its nodes, the pods bound to them, its quotas and its admission policies copied "
    "first; run it against the embedded target (without --kubeconfig)"
)


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--simulate",
        action="store_true",
        help="also apply the revision to a throwaway copy of the embedded store, run the "
        "bundled controllers on it and report the predicted outcome",
    )
    p.add_argument(
        "--for",
        dest="simulate_for",
        metavar="DUR",
        help="with --simulate: the longest the simulation may run (default 60s); it ends "
        "earlier once the copy stops changing",
    )


def budget(args: argparse.Namespace, *, url: str | None) -> float | None:
    """The simulation's budget in seconds, None without --simulate."""
    from gitkrm.agent.duration import parse_duration

    if not args.simulate:
        if args.simulate_for is not None:
            raise BadRequest("--for needs --simulate")
        return None
    if url is not None:
        raise BadRequest(NOT_ON_A_CLUSTER)
    if args.simulate_for is None:
        from gitkrm.agent.simulate import DEFAULT_BUDGET

        return DEFAULT_BUDGET
    seconds = parse_duration(args.simulate_for, what="--for")
    if not 0 < seconds <= MAX_BUDGET:
        raise BadRequest(f"--for {args.simulate_for}: give a duration above 0 and at most 1h")
    return seconds


def nothing_changed() -> dict[str, Any]:
    """The section of a source that did not change since its last sync."""
    from gitkrm.agent.simulate import skipped

    return skipped("nothing changed since the last sync: the live store is the outcome")


async def simulate(opened: Opened, sp: SourcePlan, seconds: float) -> dict[str, Any]:
    """The `simulation` section of one source's plan."""
    from gitkrm.agent.simulate import SimSource, simulate, skipped, to_json
    from gitkrm.agent.state import STORE_FILE, parse_cache_file
    from gitkrm.sync.parsecache import ParseCache

    from .plan_report import EXIT_ERROR, EXIT_REFUSED

    if sp.code == EXIT_ERROR:
        return skipped("the revision can't be applied (the errors above)")
    if sp.code == EXIT_REFUSED:
        return skipped("a guard refuses the revision")
    cache = ParseCache(parse_cache_file(opened.state, opened.config.name), read_only=True)
    source = SimSource(options=opened.engine.options, snapshot=opened.snapshot, parse_cache=cache)
    found = await simulate(live_store=opened.state / STORE_FILE, sources=[source], budget=seconds)
    return to_json(found)
