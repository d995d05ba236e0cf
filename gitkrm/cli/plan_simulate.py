"""`gitkrm plan --simulate [--for DUR]`: the planned sources applied together to one twin
of the embedded store with the bundled controllers running on it in simulated time
(`gitkrm.agent.simulate`), the predicted outcome added to each source's plan as its
`simulation` section.

`Simulator` holds the twin of one `plan` run: opened at the first source to simulate, each
source applied as it is planned (a tree's children after their parent, as the agent syncs
them), judged once every source was planned (`session`), and split per source.

Not on the cluster target: a twin of a cluster would need its nodes, bound pods, quotas
and policies copied first (a later issue), so the command refuses with exit 2."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final

from gitkrm.errors import BadRequest

if TYPE_CHECKING:
    from gitkrm.agent.simulate.twin import Twin

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
        help="with --simulate: the simulated time to run the controllers for (default 60s, "
        "at most 1h); it is simulated, not waited: 15m takes seconds",
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


class Simulator:
    """The one twin of a `plan --simulate` run, and the sources applied to it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._stack: contextlib.AsyncExitStack | None = None
        self._twin: Twin | None = None
        self._applied: list[SourcePlan] = []

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """Where the sources are planned: once they all are, the twin is judged and each
        applied source gets its part of the verdict; then the twin is removed."""
        async with contextlib.AsyncExitStack() as stack:
            self._stack = stack
            yield
            if self._twin is not None:
                await self._judge(self._twin)

    async def add(self, opened: Opened, sp: SourcePlan) -> None:
        """Apply the source `sp` plans to the twin (or say why it is not simulated)."""
        from gitkrm.agent.simulate import SimSource, open_twin, skipped
        from gitkrm.agent.state import STORE_FILE, parse_cache_file
        from gitkrm.sync.parsecache import ParseCache

        from .plan_report import EXIT_ERROR, EXIT_REFUSED

        if sp.code == EXIT_ERROR:
            sp.extra["simulation"] = skipped("the revision can't be applied (the errors above)")
            return
        if sp.code == EXIT_REFUSED:
            sp.extra["simulation"] = skipped("a guard refuses the revision")
            return
        if self._twin is None:
            assert self._stack is not None, "add() outside session()"
            self._twin = await self._stack.enter_async_context(
                open_twin(live_store=opened.state / STORE_FILE, budget=self.seconds)
            )
        cache = ParseCache(parse_cache_file(opened.state, opened.config.name), read_only=True)
        await self._twin.apply(
            SimSource(
                options=opened.engine.options,
                snapshot=opened.snapshot,
                parse_cache=cache,
                settled=opened.settled,
            )
        )
        self._applied.append(sp)

    async def _judge(self, twin: Twin) -> None:
        from gitkrm.agent.simulate import for_source, to_json

        found = await twin.finish()
        for i, sp in enumerate(self._applied):
            sp.extra["simulation"] = to_json(for_source(found, sp.source, first=i == 0))
