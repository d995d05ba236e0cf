"""`gitkrm serve`: the Kubernetes-compatible API of the embedded store and its bundled
controllers (no Git)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitkrm.agent.state import STORE_FILE
from gitkrm.errors import BadRequest

from .source_flags import add_state_flag

if TYPE_CHECKING:  # the server's imports are heavy: `serve` imports them, the parser does not
    from gitkrm.server import ServeOptions

DEFAULT_LISTEN = "127.0.0.1:6443"  # gitkrm.server.serve.DEFAULT_LISTEN (tests/cli/test_imports.py)


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "serve",
        help="serve the embedded store over a Kubernetes-compatible API (for kubectl)",
        description="Serve the store in the state dir over the Kubernetes API, and write a "
        "kubeconfig for it into the state dir. Loopback needs no credentials; any other "
        "address needs --token-file and TLS.",
    )
    add_state_flag(p, holding="store.db and the kubeconfig")
    p.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"address to listen on (default {DEFAULT_LISTEN}; port 0: any free)",
    )
    p.add_argument(
        "--token-file",
        type=Path,
        metavar="F",
        help="file holding the bearer token clients must send",
    )
    p.add_argument("--tls-cert", type=Path, metavar="F", help="TLS certificate (PEM)")
    p.add_argument("--tls-key", type=Path, metavar="F", help="TLS private key (PEM)")
    p.add_argument(
        "--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"]
    )
    p.set_defaults(func=run)


def options(args: argparse.Namespace) -> ServeOptions:
    from gitkrm.server import ServeOptions, parse_listen
    from gitkrm.server.auth import load_token
    from gitkrm.server.tls import TLSFiles

    host, port = parse_listen(args.listen)
    if (args.tls_cert is None) != (args.tls_key is None):
        raise BadRequest("--tls-cert and --tls-key go together")
    tls = TLSFiles(cert=args.tls_cert, key=args.tls_key) if args.tls_cert else None
    token = load_token(args.token_file) if args.token_file else None
    return ServeOptions(
        host=host,
        port=port,
        token=token,
        tls=tls,
        state_dir=args.state,
        log_level=args.log_level,
    ).secured()


async def _main(opts: ServeOptions, state: Path) -> None:
    from gitkrm.controllers import ControllerManager, ControllerOptions
    from gitkrm.server.serve import Bound, serve
    from gitkrm.store.sqlite import SqliteStore

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    store = SqliteStore.open(str(state / STORE_FILE))

    def started(b: Bound) -> None:
        print(f"gitkrm: serving {b.url} (kubeconfig {b.kubeconfig})", file=sys.stderr, flush=True)

    # The embedded target: the bundled controllers run on the store next to the API (a
    # Deployment made with kubectl gets its ReplicaSet, pods and status).
    ca = opts.tls.ca_pem().decode() if opts.tls is not None else None
    controllers = ControllerManager(store=store, options=ControllerOptions(root_ca_pem=ca))
    try:
        await controllers.start()
        await serve(store, opts, started=started, stop=stop)
    finally:
        await controllers.stop()
        await store.close()


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from gitkrm.server.serve import new_event_loop

    args.state.mkdir(parents=True, exist_ok=True)
    opts = options(args)
    loop = new_event_loop()
    try:
        loop.run_until_complete(_main(opts, args.state))
    finally:
        loop.close()
    return 0
