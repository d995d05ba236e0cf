"""`gitkrm diff`: what a sync would change, as a unified YAML diff (exit 0 in sync, 1
differences, 2 error). Nothing is written: the target is read (an agent may be running on
it: the embedded store read-only, or a cluster), and Git sources are fetched into a
temporary cache (`sourcerun`, shared with `gitkrm plan`)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .source_flags import add_source_flags
from .sourcerun import EXIT_ERROR, each_source

if TYPE_CHECKING:  # imported by the command, not by the parser
    from .sourcerun import Opened


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "diff",
        help="show what a sync would change (exit 0 in sync, 1 differences, 2 error)",
        description="Render the sources and print a unified YAML diff per object that a sync "
        "would change (Secrets redacted). Nothing is written.",
    )
    add_source_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return max(each_source(args, visit=_diff_one), default=0)


async def _diff_one(opened: Opened) -> int:
    engine = opened.engine
    plan = await engine.plan(opened.snapshot, settled=opened.settled)
    if plan.errors:
        from gitkrm.krm import masking

        for problem in plan.errors:
            print(masking.mask(problem), file=sys.stderr)
        return EXIT_ERROR
    text = engine.diff_text(plan)
    if text:
        print(text, end="" if text.endswith("\n") else "\n")
    return 0 if plan.in_sync else 1
