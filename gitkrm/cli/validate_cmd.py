"""`gitkrm validate PATH...`: exit 0 valid, 1 invalid, 2 error."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from gitkrm.errors import BadRequest
from gitkrm.krm import Obj


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "validate",
        help="validate manifests against the Kubernetes schemas and API rules",
        description="Render and validate every manifest under PATH as `run` would admit it.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", type=Path)
    p.add_argument("-q", "--quiet", action="store_true", help="print problems only")
    from gitkrm.cli.source_flags import add_interpret_flag, add_namespace_flag, add_postbuild_flags

    add_postbuild_flags(p)
    add_namespace_flag(p)
    add_interpret_flag(p)
    p.add_argument(
        "--state",
        type=Path,
        metavar="DIR",
        help="also know the CRDs of the embedded store in DIR (as `run --state DIR` does)",
    )
    p.add_argument(
        "--apply-mode",
        choices=("client-side", "server-side"),
        default="client-side",
        help="the apply mode `run` will use (client-side: objects must fit the 256 KiB "
        "last-applied annotation)",
    )
    p.set_defaults(func=run)


async def _store_crds(state: Path) -> list[Obj]:
    """The CustomResourceDefinitions of the embedded store in `state` (read only)."""
    from gitkrm.agent.state import STORE_FILE, store_url
    from gitkrm.store import open_store
    from gitkrm.sync import live

    if not (state / STORE_FILE).is_file():
        raise BadRequest(f"--state {state}: no {STORE_FILE} there")
    store = await open_store(store_url(state), read_only=True)
    try:
        crds, _ = await live.list_at(store, live.CRD)
        return list(crds)
    finally:
        await store.close()


def _peer_crds(flag: str) -> list[Obj]:
    """The CRDs of the peers `--interpret` names (as `run` registers them)."""
    from gitkrm.agent.config_flags import parse_interpret
    from gitkrm.agent.tree import registry

    return [crd for i in registry.for_peers(parse_interpret(flag)).all for crd in i.crds()]


def run(args: argparse.Namespace) -> int:
    from gitkrm.sync.validate import validate_paths

    for path in args.paths:
        if not path.exists():
            raise BadRequest(f"{path}: no such file or directory")
    from gitkrm.cli.source_flags import postbuild

    if args.namespace is not None:
        from gitkrm.agent.config import check_name

        check_name(args.namespace, what="--namespace")
    crds = asyncio.run(_store_crds(args.state)) if args.state is not None else []
    if args.interpret:
        crds += _peer_crds(args.interpret)
    report = validate_paths(
        args.paths,
        crds=crds,
        namespace=args.namespace,
        server_side=args.apply_mode == "server-side",
        postbuild=postbuild(args),
    )
    from gitkrm.krm import masking  # values decrypted from SOPS files never shown

    for w in report.warnings:
        print(masking.mask(f"warning: {w}"), file=sys.stderr)
    for p in report.problems:
        print(masking.mask(str(p)), file=sys.stderr)
    if not args.quiet:
        verdict = "valid" if report.ok else f"{len(report.problems)} problem(s)"
        print(f"{report.objects} object(s) in {report.files} file(s): {verdict}")
    return 0 if report.ok else 1
