"""`gitkrm run`: the agent, long-lived or `--once` (exit 0 synced, 1 sync failed, 2 error)."""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitkrm.agent.duration import format_duration, parse_duration
from gitkrm.agent.logging import LogFormat
from gitkrm.errors import BadRequest
from gitkrm.krm import masking

from .source_flags import (
    Target,
    add_source_flags,
    agent_name,
    apply_mode,
    sources,
    target,
    target_url,
)

if TYPE_CHECKING:  # the agent's imports are heavy: `run` imports them, the parser does not
    from gitkrm.agent.agent import Agent, AgentOptions
    from gitkrm.agent.shutdown import Shutdown
    from gitkrm.agent.status import Outcome

# The Lease's namespace (gitkrm.agent.leader, kept equal by tests/cli/test_imports.py).
LEASE_NAMESPACE_ENV = "GITKRM_LEASE_NAMESPACE"
LEASE_NAMESPACE = "gitkrm-system"

DEFAULT_LISTEN = "127.0.0.1:6443"
DEFAULT_TIMEOUT = "5m"


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "run",
        help="run the agent: keep the target equal to the sources",
        description="Sync one source (--repo) or the GitSources of --config into the embedded "
        "store or a cluster (--kubeconfig, --target cluster): once (--once), or for good "
        "(periodic syncs, local changes, drift checks; on the embedded target the Kubernetes "
        "API of the store on --listen, on a cluster /healthz, /readyz and /metrics).",
    )
    add_source_flags(p)
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="where the long-lived agent serves: the embedded target's Kubernetes API "
        f"(default {DEFAULT_LISTEN}), or on a cluster /healthz, /readyz and /metrics "
        "(default: not served)",
    )
    api = p.add_argument_group("embedded API beyond loopback")
    api.add_argument("--token-file", type=Path, metavar="F", help="bearer token clients send")
    api.add_argument("--tls-cert", type=Path, metavar="F", help="TLS certificate (PEM)")
    api.add_argument("--tls-key", type=Path, metavar="F", help="TLS private key (PEM)")
    le = p.add_argument_group("leader election (cluster target)")
    le.add_argument(
        "--leader-elect-lease-duration",
        metavar="DUR",
        default="15s",
        help="how long a standby waits after the last renewal before taking over (15s)",
    )
    le.add_argument(
        "--leader-elect-renew-deadline",
        metavar="DUR",
        default="10s",
        help="the leader stops syncing when it could not renew for this long (10s)",
    )
    le.add_argument(
        "--leader-elect-retry-period",
        metavar="DUR",
        default="2s",
        help="how often the leader renews and a standby tries (2s)",
    )
    le.add_argument(
        "--leader-elect-resource-namespace",
        metavar="NS",
        default=os.environ.get(LEASE_NAMESPACE_ENV) or LEASE_NAMESPACE,
        help=f"the namespace of the Lease gitkrm-<agent-name> (${LEASE_NAMESPACE_ENV}, "
        f"else {LEASE_NAMESPACE})",
    )
    p.add_argument("--once", action="store_true", help="sync once and exit (0 synced, 1 failed)")
    p.add_argument(
        "--wait", action="store_true", help="with --once: wait until objects are healthy"
    )
    p.add_argument(
        "--timeout",
        metavar="DUR",
        help=f"with --wait: how long to wait (default {DEFAULT_TIMEOUT})",
    )
    p.add_argument("--log-format", choices=[f.value for f in LogFormat], default="text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gitkrm.agent.agent import AgentOptions
    from gitkrm.agent.logging import configure
    from gitkrm.server.listen import parse_listen

    if args.wait and not args.once:
        raise BadRequest("--wait needs --once")
    if args.timeout is not None and not args.wait:
        raise BadRequest("--timeout needs --wait")
    timeout = parse_duration(args.timeout or DEFAULT_TIMEOUT, what="--timeout")
    if timeout <= 0:
        raise BadRequest("--timeout must be more than 0s")
    election = _leader_election(args)
    security = _api_security(args, cluster=target(args) is Target.CLUSTER)
    url = target_url(args)
    listen = None
    if args.listen is not None or url is None:
        listen = parse_listen(args.listen or DEFAULT_LISTEN)
    # The embedded target runs the bundled controllers (a cluster has its own); `--once`
    # starts them only when something waits on health (--wait, a wave, a hook).
    controllers = None
    if url is None:
        from gitkrm.controllers import ControllerOptions

        controllers = ControllerOptions()
    options = AgentOptions(
        state_dir=args.state,
        agent_name=agent_name(args),
        sources=tuple(sources(args)),
        apply_mode=apply_mode(args),
        listen=None if args.once else listen,
        controllers=controllers,
        target_url=url,
        skip_unchanged=args.once and not args.wait,
        follow_health=not args.once or args.wait,
        track_drift=not args.once,
        wait_deadline=time.monotonic() + timeout if args.wait else None,
        **security,
        **election,
    )
    configure(LogFormat(args.log_format))
    return asyncio.run(_run(options, once=args.once, wait=timeout if args.wait else None))


def _api_security(args: argparse.Namespace, *, cluster: bool) -> dict[str, Any]:
    """--token-file and TLS of the embedded API (refused on a cluster: nothing to protect)."""
    given = [f for f in ("token_file", "tls_cert", "tls_key") if getattr(args, f) is not None]
    if not given:
        return {}
    from gitkrm.server.auth import load_token  # the server's imports are heavy: only here
    from gitkrm.server.tls import TLSFiles

    if cluster:
        flag = "--" + given[0].replace("_", "-")
        raise BadRequest(f"{flag}: the cluster target serves no Kubernetes API")
    if (args.tls_cert is None) != (args.tls_key is None):
        raise BadRequest("--tls-cert and --tls-key go together")
    tls = TLSFiles(cert=args.tls_cert, key=args.tls_key) if args.tls_cert else None
    if tls is not None:
        tls.check()
    token = load_token(args.token_file) if args.token_file else None
    return {"api_token": token, "api_tls": tls}


def _leader_election(args: argparse.Namespace) -> dict[str, Any]:
    from gitkrm.agent.config import check_name
    from gitkrm.agent.leader import LeaseTimings

    timings = LeaseTimings(
        lease_duration=parse_duration(
            args.leader_elect_lease_duration, what="--leader-elect-lease-duration"
        ),
        renew_deadline=parse_duration(
            args.leader_elect_renew_deadline, what="--leader-elect-renew-deadline"
        ),
        retry_period=parse_duration(
            args.leader_elect_retry_period, what="--leader-elect-retry-period"
        ),
    ).check()
    namespace = check_name(
        args.leader_elect_resource_namespace, what="--leader-elect-resource-namespace"
    )
    return {"lease": timings, "lease_namespace": namespace}


async def _run(options: AgentOptions, *, once: bool, wait: float | None = None) -> int:
    from gitkrm.agent.agent import Agent, exit_code
    from gitkrm.agent.shutdown import Shutdown

    shutdown = Shutdown()
    shutdown.install()
    agent = Agent(options)
    try:
        await agent.open()
        if once:
            outcomes = await agent.sync_once(shutdown)
            if outcomes is None:
                print("stopped: what was left of the sync was cancelled after the grace period")
                return 1
            if not agent.runners:
                print("stopped while waiting for the Lease: nothing synced")
                return 1
            _print_summary(agent, outcomes)
            code = exit_code(outcomes)
            term = agent.term
            if term is not None and (term.problems() or term.waiting()):
                code = 1  # a declaring object that runs no child, or a child never synced
            deadline = options.wait_deadline
            if code == 0 and wait is not None and not shutdown.requested.is_set():
                code = await _wait(agent, timeout=wait, shutdown=shutdown, deadline=deadline)
            elif wait is not None and deadline is not None and time.monotonic() >= deadline:
                print(f"timed out after {format_duration(wait)}: waiting on health took it all")
            return code
        await agent.run(shutdown)
        return 0
    finally:
        await agent.close()
        shutdown.uninstall()


async def _wait(
    agent: Agent,
    *,
    timeout: float,  # noqa: ASYNC109 (--timeout, as the user gave it)
    shutdown: Shutdown,
    deadline: float | None = None,
) -> int:
    """`--wait`: run the controllers until every synced object is Current (0), one is
    Failed or the time is up (1), printing what is still waited for. `--timeout` counts
    from the start of the run (`deadline`): a tree's waits on health took their share."""
    refs = agent.applied()
    left = timeout if deadline is None else max(0.0, deadline - time.monotonic())
    shown = format_duration(int(left))  # whole seconds, never more than is left
    print(f"waiting up to {shown} for {len(refs)} object(s) to be Current")
    await agent.start_controllers()
    waiting = asyncio.ensure_future(agent.wait_healthy(timeout=left))
    stopped = asyncio.ensure_future(shutdown.requested.wait())
    try:
        await asyncio.wait({waiting, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not waiting.done():
            waiting.cancel()
        await agent.stop_controllers()
    if not waiting.done() or waiting.cancelled():
        print("wait stopped: the agent was asked to stop")
        return 1
    result = waiting.result()
    if result.ok:
        print(f"all {len(refs)} object(s) are Current")
        return 0
    failed = result.failed
    if failed:
        print(f"{len(failed)} object(s) Failed:")
        for ref, h in failed:
            print(f"  {ref}: Failed ({masking.mask(h.message)})")
    else:
        print(f"timed out after {format_duration(timeout)}; still waiting for:")
        for line in result.describe():
            print(f"  {line}")
    return 1


def _print_summary(agent: Agent, outcomes: list[Outcome]) -> None:
    """One line per source of the tree (children indented under their parents), then the
    declaring objects that run no child."""
    from gitkrm.agent.status import short, summary

    term = agent.term
    tree = None if term is None else term.tree
    runners = list(agent.runners.values())
    if tree is not None:  # each child right under its parent, not after its parent's siblings
        below: dict[str | None, list[str]] = {}
        for r in runners:
            below.setdefault(tree.parent_of(r.name), []).append(r.name)
        ordered: list[str] = []

        def visit(name: str, depth: int) -> None:
            ordered.append(name)
            for kid in below.get(name, []) if depth < 20 else []:
                visit(kid, depth + 1)

        for root in [r.name for r in runners if tree.parent_of(r.name) not in agent.runners]:
            visit(root, 0)
        seen = set(ordered)
        runners = [agent.runners[n] for n in ordered] + [r for r in runners if r.name not in seen]
    for runner in runners:
        depth = 0
        parent = None if tree is None else tree.parent_of(runner.name)
        while parent is not None and tree is not None and depth < 20:
            depth += 1
            parent = tree.parent_of(parent)
        indent = "  " * depth
        child = None if tree is None else tree.by_name(runner.name)
        if runner.config.suspend:
            print(f"{indent}{runner.name}: suspended, not synced")
            continue
        o = runner.last_outcome
        if o is None:
            waiting = ""
            if child is not None and child.waiting_for:
                from gitkrm.agent.tree.naming import describe

                waiting = ": waiting for " + ", ".join(describe(r) for r in child.waiting_for)
            print(f"{indent}{runner.name}: not synced{waiting or ' (stopped)'}")
            continue
        result = "synced" if o.succeeded else f"FAILED ({len(o.errors)} error(s) above)"
        if o.nothing_changed:
            result = "in sync, nothing changed since the last sync of"
        if o.succeeded and o.out_of_sync is not None:  # compared only (no automated sync)
            differ = f"{len(o.out_of_sync)} object(s) differ, not applied"
            print(f"{indent}{runner.name}: compared revision {short(o.revision)}: "
                  f"{differ if o.out_of_sync else 'in sync'}")  # fmt: skip
            continue
        print(f"{indent}{runner.name}: {result} revision {short(o.revision)}: {summary(o.counts)}")
    for problem in [] if term is None else term.problems():
        print(f"error: {problem}")
