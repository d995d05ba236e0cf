"""The `gitkrm` command line: argument parsing and exit codes, nothing else.

Errors a user can cause are printed as one line on stderr (no traceback) and give exit
code 2; each command decides what 0 and 1 mean (docs/reference.md, CLI).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gitkrm import __version__
from gitkrm.cli import (
    diff_cmd,
    get_cmd,
    history_cmd,
    plan_cmd,
    run_cmd,
    serve_cmd,
    status_cmd,
    validate_cmd,
)
from gitkrm.errors import GitkrmError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_ERROR = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gitkrm",
        description="A GitOps agent for Kubernetes Resource Model manifests.",
    )
    parser.add_argument("--version", action="version", version=f"gitkrm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    run_cmd.add_parser(sub)
    diff_cmd.add_parser(sub)
    plan_cmd.add_parser(sub)
    validate_cmd.add_parser(sub)
    serve_cmd.add_parser(sub)
    get_cmd.add_parser(sub)
    status_cmd.add_parser(sub)
    history_cmd.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except GitkrmError as e:
        from gitkrm.krm import masking

        print(f"gitkrm: error: {masking.mask(e.message)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
