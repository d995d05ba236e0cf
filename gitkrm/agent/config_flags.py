"""The source the command-line flags describe (`--repo`, `--branch`, ...), and `--interpret`.

A `--repo` that is a plain directory (no Git repository) becomes a development source
with no ref; anything else is a Git source at the ref the flags name.
"""

from __future__ import annotations

from pathlib import Path

from gitkrm.errors import BadRequest
from gitkrm.source import GitRef
from gitkrm.sync.options import DEFAULT_PRUNE_BUDGET, PruneBudget

from .config import (
    DEFAULT_INTERVAL,
    SourceConfig,
    check_name,
    is_git_repository,
    is_remote_url,
    resolve_url,
)
from .tree.model import Peer


def from_flags(
    *,
    repo: str,
    branch: str | None,
    tag: str | None,
    commit: str | None,
    path: str | None,
    source_name: str,
    interval: float | None,
    namespace: str | None = None,
    ref: str | None = None,
    semver: str | None = None,
    prune_budget: PruneBudget = DEFAULT_PRUNE_BUDGET,
) -> SourceConfig:
    """The one source the flags describe; a plain directory becomes a development source."""
    check_name(source_name, what="--source-name")
    if namespace is not None:
        check_name(namespace, what="--namespace")
    url = resolve_url(repo, Path.cwd())
    ref_given = any((branch, tag, commit, ref, semver))
    if not is_remote_url(url):
        p = Path(url)
        if not p.exists():
            raise BadRequest(f"--repo {repo}: no such directory (nor a URL git understands)")
        if not p.is_dir():
            raise BadRequest(f"--repo {repo}: not a directory")
        if not is_git_repository(p):
            if ref_given:
                raise BadRequest(
                    f"--repo {repo} is a plain directory, not a Git repository: "
                    "--branch, --tag, --commit, --ref and --semver need one"
                )
            return SourceConfig(
                name=source_name,
                url=url,
                ref=None,
                path=path or "",
                interval=interval or DEFAULT_INTERVAL,
                default_namespace=namespace,
                prune_budget=prune_budget,
            )
    return SourceConfig(
        name=source_name,
        url=url,
        ref=GitRef.from_flags(branch=branch, tag=tag, commit=commit, ref=ref, semver=semver),
        path=path or "",
        interval=interval or DEFAULT_INTERVAL,
        default_namespace=namespace,
        prune_budget=prune_budget,
    )


def parse_interpret(value: str, *, what: str = "--interpret") -> frozenset[Peer]:
    """`flux,argocd`: the peers named (comma-separated); an unknown one is an error."""
    out: set[Peer] = set()
    for word in (w.strip() for w in value.split(",")):
        if not word:
            continue
        try:
            out.add(Peer(word))
        except ValueError:
            known = ", ".join(p.value for p in Peer)
            raise BadRequest(f"{what} {word!r}: not a peer gitkrm interprets ({known})") from None
    return frozenset(out)
