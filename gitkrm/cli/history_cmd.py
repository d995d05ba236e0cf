"""`gitkrm history`: the tracked branch's commits with each one's sync result and health.

Reads the notes gitkrm writes on synced commits (docs/status-format.md): from a clone or
any repository (`--repo PATH`, notes fetched from its remote first), from a remote
(`--repo URL`), or from an agent's state directory (`--state DIR`, the default when it
exists). Exit 0 when history was shown, 2 on errors.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitkrm.errors import BadRequest, GitkrmError

if TYPE_CHECKING:
    from gitkrm.report.history import HistoryEntry, SyncRecord

DEFAULT_STATE = Path(".gitkrm")
DETAILS = 3


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "history",
        help="show synced commits with their sync result and health (the audit trail)",
        description="Show the tracked branch's commits with each one's sync result and "
        "health, read from the git notes gitkrm writes (refs/notes/gitkrm/<agent>). "
        "Works on any clone of the repository: the notes are fetched from its remote.",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--state",
        type=Path,
        metavar="DIR",
        help="an agent's state directory (default ./.gitkrm when it exists)",
    )
    where.add_argument(
        "--repo",
        metavar="PATH|URL",
        help="a clone or repository on this machine, or a remote URL "
        "(default: the repository of the current directory)",
    )
    p.add_argument("--branch", metavar="B", help="with --repo: the branch (default HEAD)")
    p.add_argument("-n", "--max-count", type=int, default=20, metavar="N", help="commits (20)")
    p.add_argument("--agent", metavar="NAME", help="only this agent's syncs")
    p.add_argument("--source", metavar="NAME", help="only this source's syncs")
    p.add_argument(
        "--no-fetch", action="store_true", help="with a local --repo: don't fetch notes first"
    )
    p.add_argument("-o", "--output", choices=("table", "yaml", "json"), default="table")
    p.set_defaults(func=run)


def _is_url(text: str) -> bool:
    if "://" in text:
        return not text.startswith("file://")
    colon, slash = text.find(":"), text.find("/")
    return colon > 1 and (slash < 0 or colon < slash)


def load(args: argparse.Namespace) -> list[HistoryEntry]:
    from gitkrm.report.history import (
        Filter,
        check_limit,
        fetch_notes,
        git_dir_of,
        repo_history,
        state_history,
        url_history,
    )

    limit = check_limit(args.max_count)
    flt = Filter(agent=args.agent, source=args.source)
    if args.state is None and args.repo is None:
        if (DEFAULT_STATE / "git").is_dir():
            args.state = DEFAULT_STATE
        else:
            args.repo = "."
    if args.state is not None:
        if args.branch:
            raise BadRequest("--branch goes with --repo (the state has the agent's branch)")
        return state_history(args.state, limit=limit, flt=flt)
    repo: str = args.repo
    if _is_url(repo):
        return url_history(repo, branch=args.branch, limit=limit, flt=flt)
    path = Path(repo.removeprefix("file://"))
    git_dir = git_dir_of(path)
    if not args.no_fetch:
        try:
            fetch_notes(git_dir)
        except GitkrmError as e:
            print(f"gitkrm: warning: notes not fetched: {e.message}", file=sys.stderr)
    rev = f"refs/heads/{args.branch}" if args.branch else "HEAD"
    return repo_history(git_dir, rev=rev, limit=limit, flt=flt)


def run(args: argparse.Namespace) -> int:
    entries = load(args)
    if args.output == "json":
        import orjson

        data = {"commits": [e.to_dict() for e in entries]}
        print(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    elif args.output == "yaml":
        from gitkrm.krm import dump_yaml

        print(dump_yaml({"commits": [e.to_dict() for e in entries]}), end="")
    elif not entries:
        print("No commits.")
    else:
        print(table(entries), end="")
    return 0


def _details(r: SyncRecord) -> list[str]:
    lines: list[str] = []
    if not r.applied:
        lines.append("not applied: nothing of this revision was synced")
    objects = [o for o in r.entry.get("objects") or () if isinstance(o, dict)]
    for o in objects[:DETAILS]:
        kind = f"{o.get('group')}/{o.get('kind')}" if o.get("group") else str(o.get("kind"))
        name = f"{o['namespace']}/{o.get('name')}" if o.get("namespace") else str(o.get("name"))
        why = ": ".join(str(x) for x in (o.get("reason"), o.get("message")) if x)
        lines.append(f"{kind} {name}: {o.get('health')}" + (f" ({why})" if why else ""))
    if len(objects) > DETAILS:
        lines.append(f"... and {len(objects) - DETAILS} more object(s) not Current")
    errors = [str(e) for e in r.entry.get("errors") or ()]
    lines += [f"error: {e}" for e in errors[:DETAILS]]
    if len(errors) > DETAILS:
        lines.append(f"... and {len(errors) - DETAILS} more error(s)")
    return [f"    ! {r.agent}/{r.source}: {line}".replace("\n", " ") for line in lines]


def table(entries: Sequence[HistoryEntry]) -> str:
    from gitkrm.report.table import aligned

    headers = ["COMMIT", "DATE", "AGENT", "SOURCE", "PARENT", "RESULT", "HEALTH", "SYNCED"]
    headers.append("SUBJECT")
    rows: list[tuple[list[str], list[str]]] = []
    for e in entries:
        c = e.commit
        date = c.time.strftime("%Y-%m-%d %H:%M") if c.time else "-"
        base = [c.sha[:12], date]
        if not e.records:
            rows.append(([*base, "-", "-", "-", "-", "-", "-", c.subject], []))
        for i, r in enumerate(e.records):
            first = base if i == 0 else ["", ""]
            parent = str(r.entry.get("parent") or "-")
            cells = [*first, r.agent, r.source, parent, r.result, r.health, r.time or "-"]
            rows.append(([*cells, c.subject if i == 0 else ""], _details(r)))
    lines = aligned([headers] + [cells for cells, _ in rows])
    out = [lines[0]]
    for line, (_, details) in zip(lines[1:], rows, strict=True):
        out.append(line)
        out.extend(d + "\n" for d in details)
    return "".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `history` alone (for tests and `python -m`); `gitkrm history` is the usual way."""
    parser = argparse.ArgumentParser(prog="gitkrm")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["history", *(argv or [])])
    try:
        return int(args.func(args))
    except GitkrmError as e:
        print(f"gitkrm: error: {e.message}", file=sys.stderr)
        return 2
