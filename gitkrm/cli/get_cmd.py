"""`gitkrm get KIND[,KIND...] [NAME...]`: objects of the store, as `kubectl get` shows them.

This module is the command line only, and imports little: `gitkrm --help` and the other
commands do not pay for the store, the schemas or the server's printers. What the command
reads and prints is in `get_print`, imported when the command runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gitkrm.errors import BadRequest

from .source_flags import add_state_flag

OUTPUTS = ("table", "wide", "yaml", "json", "name")


@dataclass(frozen=True, slots=True)
class Target:
    """What one argument asks for: the kinds as typed (a resource name, a short name, a
    kind, a category such as `all`) and the names of the objects (none: a list)."""

    kinds: tuple[str, ...]
    names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Request:
    targets: tuple[Target, ...]
    namespace: str | None  # None: every namespace (`-A`)
    label_selector: str | None = None
    field_selector: str | None = None
    output: str = "table"
    show_labels: bool = False


class _Intermixed(argparse.ArgumentParser):
    """Options and positionals in any order (`get cm -n ns NAME`, as kubectl takes it)."""

    _inner = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._inner:
            return super().parse_known_args(args, namespace)
        self._inner = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inner = False


def add_parser(sub: Any) -> None:
    default_class = sub._parser_class
    sub._parser_class = _Intermixed
    try:
        p: argparse.ArgumentParser = sub.add_parser(
            "get",
            help="show objects of the store",
            description="Show objects of the embedded store (works while an agent runs on "
            "it), as kubectl get shows them.",
        )
    finally:
        sub._parser_class = default_class
    p.add_argument(
        "what",
        nargs="+",
        metavar="KIND[,KIND...] [NAME...] | KIND/NAME...",
        help="e.g. deployments, deploy,svc, all, cm NAME, deploy/NAME",
    )
    ns = p.add_mutually_exclusive_group()
    ns.add_argument("-n", "--namespace", metavar="NS", help="namespace (default: default)")
    ns.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    p.add_argument("-o", "--output", choices=OUTPUTS, default="table")
    p.add_argument(
        "-l", "--selector", metavar="SELECTOR", help="label selector, e.g. app=web,tier!=db"
    )
    p.add_argument(
        "--field-selector", metavar="SELECTOR", help="field selector, e.g. metadata.name=web"
    )
    p.add_argument("--show-labels", action="store_true", help="a LABELS column after the others")
    add_state_flag(p, holding="store.db")
    p.set_defaults(func=run)


def parse_targets(words: Sequence[str]) -> tuple[Target, ...]:
    """kubectl's two forms: `KIND[,KIND...] [NAME...]`, or `KIND/NAME...` only."""
    if any("/" in w for w in words):
        if not all("/" in w for w in words):
            raise BadRequest(
                "there is no need to specify a resource type as a separate argument when "
                "passing arguments in resource/name form (e.g. 'gitkrm get resource/<name>' "
                "instead of 'gitkrm get resource resource/<name>')"
            )
        targets = []
        for w in words:
            kind, _, name = w.partition("/")
            if not kind or not name or "," in kind or "/" in name:
                raise BadRequest(
                    "arguments in resource/name form must have a single resource and name"
                )
            targets.append(Target((kind,), (name,)))
        return tuple(targets)
    kinds = tuple(dict.fromkeys(k for k in words[0].split(",") if k))
    if not kinds:
        raise BadRequest("required resource not specified")
    return (Target(kinds, tuple(words[1:])),)


def request(args: argparse.Namespace) -> Request:
    """The flags, checked as kubectl checks them."""
    targets = parse_targets(args.what)
    named = any(t.names for t in targets)
    if named and args.all_namespaces:
        raise BadRequest("a resource cannot be retrieved by name across all namespaces")
    if named and args.selector:
        raise BadRequest("name cannot be provided when a selector is specified")
    if args.show_labels and args.output in ("yaml", "json", "name"):
        raise BadRequest(f"--show-labels option cannot be used with {args.output} printer")
    return Request(
        targets=targets,
        namespace=None if args.all_namespaces else (args.namespace or "default"),
        label_selector=args.selector or None,
        field_selector=args.field_selector or None,
        output=args.output,
        show_labels=args.show_labels,
    )


def run(args: argparse.Namespace) -> int:
    req = request(args)
    import asyncio  # the command's heavy imports load when it runs

    from gitkrm.cli import get_print

    result: int = asyncio.run(get_print.get(args.state, req))
    return result
