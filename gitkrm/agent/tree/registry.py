"""Which interpreters a source uses: always gitkrm's own GitSource interpreter
(`tree.gitsource`), plus, per `SourceConfig.interpret`, each named peer's module-level
`INTERPRETER` (`gitkrm.agent.tree.flux`, `gitkrm.agent.tree.argocd`, ...).

The peers' modules are imported when a source names the peer, never at start
(tests/cli/test_imports.py): `gitkrm run` without `--interpret` loads none of them. A peer
whose module this build lacks is a usage error naming the flag, not a crash.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Final, cast

from gitkrm.errors import BadRequest
from gitkrm.krm import GroupKind

from .model import Interpreter, Interpreters, Peer

MODULES: Final[Mapping[Peer, tuple[str, ...]]] = {
    Peer.FLUX: ("flux", "helmrelease", "flux_generator"),
    Peer.ARGOCD: ("argocd", "argocd_appset"),
}
"""A peer's modules under `gitkrm.agent.tree`: the first is the peer itself (required),
the others add kinds when this build has them (Flux's HelmRelease)."""

_PACKAGE: Final = "gitkrm.agent.tree"
_INERT: Final[Mapping[Peer, str]] = {Peer.FLUX: "flux_inert"}
"""A peer's module whose `INERT` names kinds registered but not acted on, and why."""


def _module_interpreter(module: str, *, required: bool, peer: Peer) -> Interpreter | None:
    name = f"{_PACKAGE}.{module}"
    try:
        loaded = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:
            raise  # the module exists, something it imports does not: a bug, shown as such
        if required:
            raise BadRequest(
                f"--interpret {peer.value} is not available in this build "
                f"(no module {name}); interpret only: "
                f"{', '.join(p.value for p in available()) or 'nothing'}"
            ) from None
        return None
    found = getattr(loaded, "INTERPRETER", None)
    if found is None:
        raise BadRequest(f"--interpret {peer.value}: {name} has no INTERPRETER")
    return cast(Interpreter, found)


@cache
def _peer(peer: Peer) -> tuple[Interpreter, ...]:
    out: list[Interpreter] = []
    for i, module in enumerate(MODULES[peer]):
        found = _module_interpreter(module, required=i == 0, peer=peer)
        if found is not None:
            out.append(found)
    return tuple(out)


@cache
def for_peers(peers: frozenset[Peer]) -> Interpreters:
    """gitkrm's GitSource interpreter and those of `peers` (BadRequest: a peer missing)."""
    from .gitsource import INTERPRETER

    out: list[Interpreter] = [INTERPRETER]
    for peer in sorted(peers):
        out.extend(_peer(peer))
    return Interpreters(all=tuple(out))


@cache
def inert(peers: frozenset[Peer]) -> Mapping[GroupKind, str]:
    """The kinds of `peers` whose CRDs gitkrm registers but on which nothing acts, and why
    (`tree.flux_inert`): the log names them, never silent."""
    out: dict[GroupKind, str] = {}
    for peer in sorted(peers):
        module = _INERT.get(peer)
        if module is not None:
            out.update(importlib.import_module(f"{_PACKAGE}.{module}").INERT)
    return out


@cache
def crd_texts(peers: frozenset[Peer]) -> tuple[str, ...]:
    """The CRDs of `peers`' interpreters as JSON (`SyncOptions.extra_crds`)."""
    import orjson

    return tuple(orjson.dumps(crd).decode() for i in for_peers(peers).all for crd in i.crds())


def check(peers: Iterable[Peer]) -> None:
    """Raise the usage error of `for_peers` before anything starts (the CLI's flags, a
    `--config` file's `spec.interpret`)."""
    for_peers(frozenset(peers))


def available() -> tuple[Peer, ...]:
    """The peers this build can interpret."""
    out = []
    for peer in Peer:
        spec = importlib.util.find_spec(f"{_PACKAGE}.{MODULES[peer][0]}")
        if spec is not None:
            out.append(peer)
    return tuple(out)
