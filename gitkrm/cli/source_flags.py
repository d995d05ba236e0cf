"""The source and target flags `run` and `diff` share (docs/reference.md), and what they mean."""

from __future__ import annotations

import argparse
import os
import re
import socket
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from gitkrm.errors import BadRequest

if TYPE_CHECKING:  # the parser imports nothing heavy: each command imports what it uses
    from gitkrm.agent.config import ApplyMode, SourceConfig
    from gitkrm.sync.options import PruneBudget
    from gitkrm.sync.postbuild_spec import PostBuildSpec

DEFAULT_STATE = Path(".gitkrm")


def add_state_flag(
    p: argparse.ArgumentParser, *, holding: str = "store.db, the Git cache, kubeconfig"
) -> None:
    """`--state DIR` (default ./.gitkrm); `holding`: what the command uses of it."""
    p.add_argument(
        "--state",
        type=Path,
        default=DEFAULT_STATE,
        metavar="DIR",
        help=f"state directory: {holding} (default ./.gitkrm)",
    )


def add_namespace_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--namespace",
        metavar="NS",
        help="namespace of namespaced objects that name none (GitSource "
        "spec.defaultNamespace; default: default, as kubectl)",
    )


def add_interpret_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--interpret",
        metavar="PEERS",
        help="comma-separated: flux, argocd. Their Kustomizations / Applications in a synced "
        "revision become child sources (GitSource spec.interpret; added to every source)",
    )


def interpret(args: argparse.Namespace, configs: list[SourceConfig]) -> list[SourceConfig]:
    """`configs` with `--interpret` added to each; every peer they name checked to be
    available in this build (a usage error otherwise)."""
    from gitkrm.agent.config_flags import parse_interpret
    from gitkrm.agent.tree import registry

    flag = getattr(args, "interpret", None)
    peers = parse_interpret(flag) if flag else frozenset()
    out = [replace(c, interpret=c.interpret | peers) if peers else c for c in configs]
    for c in out:
        if c.interpret:
            registry.check(c.interpret)
    return out


def add_source_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("source (one source from flags, or --config)")
    g.add_argument("--repo", metavar="URL|PATH", help="Git URL, local repository or directory")
    refs = g.add_mutually_exclusive_group()
    refs.add_argument("--branch", metavar="B", help="branch to track (default main)")
    refs.add_argument("--tag", metavar="T", help="tag to track")
    refs.add_argument("--commit", metavar="SHA", help="commit to pin (a full sha)")
    refs.add_argument(
        "--ref",
        metavar="REF",
        help="any ref of the remote by its full name (refs/pull/12/head), or HEAD: the "
        "remote's default branch",
    )
    refs.add_argument(
        "--semver",
        metavar="RANGE",
        help="track the highest tag a semver range allows (e.g. '>=1.0.0 <2.0.0'), "
        "resolved again at every interval",
    )
    g.add_argument("--path", metavar="DIR", help="sub-directory of the repository to sync")
    g.add_argument(
        "--path-rules",
        choices=["flux", "argocd"],
        help="how --path renders: flux (the default: every file below it, as a Flux "
        "Kustomization) or argocd (as an Argo CD Application's source: a directory source "
        "reads the files of the path itself)",
    )
    g.add_argument(
        "--source-name",
        metavar="NAME",
        help="the source's name, a DNS-1123 label (default: default)",
    )
    g.add_argument(
        "--agent-name", metavar="NAME", help="this agent's name (default: the host name)"
    )
    g.add_argument("--interval", metavar="DUR", help="how often to sync (default 30s)")
    add_namespace_flag(g)  # type: ignore[arg-type]
    add_interpret_flag(g)  # type: ignore[arg-type]
    g.add_argument(
        "--prune-budget",
        type=int,
        metavar="N",
        help="prune at most N objects (or --prune-budget-percent of the inventory, whichever "
        "is more) without a Gitkrm-Allow-Prune trailer (spec.pruneBudget.count; default 10)",
    )
    g.add_argument(
        "--prune-budget-percent",
        type=int,
        metavar="P",
        help="the prune budget as a percentage of the inventory (default 25)",
    )
    g.add_argument("--config", type=Path, metavar="FILE", help="a file of GitSource objects")
    g.add_argument(
        "--helm-values",
        type=Path,
        action="append",
        metavar="FILE",
        help="values for the Helm charts of the sources (repeatable; after spec.helm.values)",
    )
    g.add_argument(
        "--helm-set",
        action="append",
        metavar="K=V",
        help="a Helm --set expression for the sources' charts (repeatable; applied last)",
    )
    add_postbuild_flags(p)
    t = p.add_argument_group("target")
    add_state_flag(t)  # type: ignore[arg-type]
    t.add_argument(
        "--target",
        choices=[t.value for t in Target],
        help="embedded: the store in --state (default); cluster: a Kubernetes cluster "
        "(--kubeconfig, or the in-cluster service account without it)",
    )
    t.add_argument(
        "--kubeconfig", metavar="FILE", help="sync into the cluster this kubeconfig names"
    )
    t.add_argument("--context", metavar="C", help="the kubeconfig context (default: current)")
    t.add_argument(
        "--apply-mode",
        choices=("client-side", "server-side"),
        default="client-side",
        help="three-way client-side apply (default) or server-side apply",
    )


def add_postbuild_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("post-build (Flux's substitution and SOPS decryption)")
    g.add_argument(
        "--substitute",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a variable for ${KEY} in the manifests (repeatable; one source only)",
    )
    g.add_argument(
        "--substitute-strict",
        action="store_true",
        help="an unset variable without a default is an error",
    )
    g.add_argument(
        "--sops-age-key-file",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="age keys (age-keygen output) that decrypt SOPS files (repeatable)",
    )


def postbuild(args: argparse.Namespace) -> PostBuildSpec | None:
    """The post-build settings of `--substitute`, `--substitute-strict` and
    `--sops-age-key-file` (a PostBuildSpec, or None)."""
    from gitkrm.agent.postbuild_config import from_flags

    return from_flags(
        substitute=args.substitute, strict=args.substitute_strict, key_files=args.sops_age_key_file
    )


class Target(StrEnum):
    EMBEDDED = "embedded"
    CLUSTER = "cluster"


def target(args: argparse.Namespace) -> Target:
    """`--target`, or what `--kubeconfig` implies (cluster), or embedded."""
    if args.context and not args.kubeconfig:
        raise BadRequest("--context needs --kubeconfig")
    if args.kubeconfig is not None:
        if args.target == Target.EMBEDDED:
            raise BadRequest("--kubeconfig selects the cluster target: drop --target embedded")
        return Target.CLUSTER
    return Target(args.target or Target.EMBEDDED)


def target_url(args: argparse.Namespace) -> str | None:
    """The store URL of the cluster target (`kube://?kubeconfig=...&context=...`; in-cluster
    configuration without --kubeconfig), None for the embedded target."""
    if target(args) is Target.EMBEDDED:
        return None
    query: dict[str, str] = {}
    if args.kubeconfig is not None:
        path = Path(args.kubeconfig).expanduser()
        if not path.is_file():
            raise BadRequest(f"--kubeconfig {args.kubeconfig}: no such file")
        try:
            path.open("rb").close()
        except OSError as e:
            raise BadRequest(f"--kubeconfig {args.kubeconfig}: {e.strerror or e}") from None
        query["kubeconfig"] = str(path.resolve())
    elif not (
        os.environ.get("KUBERNETES_SERVICE_HOST") and os.environ.get("KUBERNETES_SERVICE_PORT")
    ):
        raise BadRequest(
            "--target cluster: not running in a pod (KUBERNETES_SERVICE_HOST and "
            "KUBERNETES_SERVICE_PORT are unset): give --kubeconfig FILE"
        )
    if args.context:
        query["context"] = args.context
    return "kube://?" + urlencode(query)


def host_agent_name() -> str:
    """The host name made into a DNS-1123 label (`Build-01.example.com` -> `build-01`)."""
    first = socket.gethostname().split(".")[0].lower()
    label = re.sub(r"[^a-z0-9-]+", "-", first).strip("-")[:63].rstrip("-")
    return label or "gitkrm"


def apply_mode(args: argparse.Namespace) -> ApplyMode:
    mode: ApplyMode = "server-side" if args.apply_mode == "server-side" else "client-side"
    return mode


def agent_name(args: argparse.Namespace) -> str:
    from gitkrm.agent.config import check_name

    if args.agent_name is not None:
        return check_name(args.agent_name, what="--agent-name")
    return host_agent_name()


def sources(args: argparse.Namespace) -> list[SourceConfig]:
    """The sources the flags name: `--config FILE`, or `--repo` and its companions."""
    from gitkrm.agent.config import DEFAULT_SOURCE_NAME
    from gitkrm.agent.config_flags import from_flags
    from gitkrm.agent.config_read import load_config_file
    from gitkrm.agent.duration import parse_duration

    interval = None
    if args.interval is not None:
        interval = parse_duration(args.interval, what="--interval")
        if interval <= 0:
            raise BadRequest("--interval must be more than 0s")
    if args.config is not None:
        if args.repo is not None:
            raise BadRequest("give --repo or --config, not both")
        given = [
            f"--{f.replace('_', '-')}"
            for f in (
                "branch",
                "tag",
                "commit",
                "ref",
                "semver",
                "path",
                "source_name",
                "namespace",
                "prune_budget",
                "prune_budget_percent",
                "path_rules",
            )
            if getattr(args, f, None) is not None
        ]
        if args.substitute or args.substitute_strict:
            given.append("--substitute" if args.substitute else "--substitute-strict")
        if given:
            raise BadRequest(f"{', '.join(given)}: describe the sources in --config instead")
        configs = load_config_file(args.config, default_interval=interval)
        if args.sops_age_key_file:
            from gitkrm.agent.postbuild_config import with_key_files

            postbuild(args)  # checks the files exist
            configs = [
                replace(c, postbuild=with_key_files(c.postbuild, args.sops_age_key_file))
                for c in configs
            ]
        return interpret(args, [with_helm_flags(c, args) for c in configs])
    if args.repo is None:
        raise BadRequest("nothing to sync: give --repo URL|PATH or --config FILE")
    config = from_flags(
        repo=args.repo,
        branch=args.branch,
        tag=args.tag,
        commit=args.commit,
        path=args.path,
        source_name=args.source_name or DEFAULT_SOURCE_NAME,
        interval=interval,
        namespace=args.namespace,
        ref=args.ref,
        semver=args.semver,
        prune_budget=prune_budget(args),
    )
    if getattr(args, "path_rules", None) == "argocd":
        from gitkrm.sync.appsource_spec import AppSource

        config = replace(config, app_source=AppSource())  # what `argocd app create` makes
    return interpret(args, [with_helm_flags(replace(config, postbuild=postbuild(args)), args)])


def prune_budget(args: argparse.Namespace) -> PruneBudget:
    """`--prune-budget N` and `--prune-budget-percent P` over the default budget."""
    from gitkrm.sync.options import DEFAULT_PRUNE_BUDGET, PruneBudget

    count = args.prune_budget
    percent = args.prune_budget_percent
    return PruneBudget(
        count=DEFAULT_PRUNE_BUDGET.count if count is None else count,
        percent=DEFAULT_PRUNE_BUDGET.percent if percent is None else percent,
    )


def with_helm_flags(config: SourceConfig, args: argparse.Namespace) -> SourceConfig:
    """`config` with `--helm-values` files merged over its `spec.helm.values` and `--helm-set`
    after its `spec.helm.set`."""
    files: list[Path] = getattr(args, "helm_values", None) or []
    sets: list[str] = getattr(args, "helm_set", None) or []
    if not files and not sets:
        return config
    import yaml

    from gitkrm.charts.spec import HelmSpec, merge_values

    values: dict[str, object] = {}
    for f in files:
        try:
            loaded = yaml.safe_load(f.read_text()) or {}
        except OSError as e:
            raise BadRequest(f"--helm-values {f}: {e.strerror or e}") from None
        except yaml.YAMLError as e:
            raise BadRequest(f"--helm-values {f}: {e}") from None
        if not isinstance(loaded, dict):
            raise BadRequest(f"--helm-values {f}: not a mapping of values")
        values = merge_values(values, loaded)
    for expression in sets:
        if "=" not in expression:
            raise BadRequest(f"--helm-set {expression!r}: not KEY=VALUE")
    helm = (config.helm or HelmSpec()).with_overrides(values=values, sets=tuple(sets))
    return replace(config, helm=helm)
