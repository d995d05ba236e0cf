from pathlib import Path

import pytest

from gitkrm.agent.config import SourceConfig
from gitkrm.agent.config_flags import parse_interpret
from gitkrm.agent.config_read import from_object
from gitkrm.agent.tree import registry
from gitkrm.agent.tree.gitsource import INTERPRETER
from gitkrm.agent.tree.model import Peer
from gitkrm.errors import BadRequest, Invalid
from gitkrm.krm import GroupKind


def test_gitsource_interpreter_always_first() -> None:
    found = registry.for_peers(frozenset())
    assert found.all == (INTERPRETER,)
    assert found.for_kind(GroupKind(group="gitkrm.io", kind="GitSource")) is INTERPRETER
    assert found.for_kind(GroupKind(group="apps", kind="Deployment")) is None


@pytest.mark.parametrize("peer", list(Peer))
def test_a_peer_is_interpreted_or_said_missing(peer: Peer) -> None:
    if peer in registry.available():
        kinds = registry.for_peers(frozenset({peer})).kinds
        assert len(kinds) > 1
    else:
        with pytest.raises(BadRequest, match=f"--interpret {peer.value} is not available"):
            registry.check({peer})


def test_parse_interpret() -> None:
    assert parse_interpret("flux, argocd,") == {Peer.FLUX, Peer.ARGOCD}
    with pytest.raises(BadRequest, match="'helm': not a peer"):
        parse_interpret("flux,helm")


def test_interpret_round_trips_through_the_gitsource() -> None:
    config = SourceConfig(name="a", url="https://example.com/r.git", interpret=frozenset(Peer))
    obj = config.to_object(agent_name="x")
    assert obj["spec"]["interpret"] == sorted(p.value for p in Peer)
    assert from_object(obj, base=Path("/")).interpret == frozenset(Peer)
    obj["spec"]["interpret"] = ["kustomize"]
    with pytest.raises(Invalid, match=r"spec\.interpret"):
        from_object(obj, base=Path("/"))
