"""`gitkrm validate PATH...`: exit 0 valid, 1 invalid, 2 error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from gitkrm.errors import BadRequest


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "validate",
        help="validate manifests against the Kubernetes schemas and API rules",
        description="Validate every manifest under PATH as the API server would admit it.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", type=Path)
    p.add_argument("-q", "--quiet", action="store_true", help="print problems only")
    from gitkrm.cli.source_flags import add_postbuild_flags

    add_postbuild_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gitkrm.sync.validate import validate_paths

    for path in args.paths:
        if not path.exists():
            raise BadRequest(f"{path}: no such file or directory")
    from gitkrm.cli.source_flags import postbuild

    report = validate_paths(args.paths, postbuild=postbuild(args))
    for w in report.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for p in report.problems:
        print(str(p), file=sys.stderr)
    if not args.quiet:
        verdict = "valid" if report.ok else f"{len(report.problems)} problem(s)"
        print(f"{report.objects} object(s) in {report.files} file(s): {verdict}")
    return 0 if report.ok else 1
