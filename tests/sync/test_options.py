"""Sync options and results: validation of names and modes, status and counts."""

from __future__ import annotations

import pytest

from gitkrm.errors import BadRequest
from gitkrm.krm import ObjectRef
from gitkrm.sync.options import IgnoreDifference, SyncOptions
from gitkrm.sync.results import Action, ObjectResult, SyncStatus, make_result


def test_names_must_be_dns_labels_and_fit_the_inventory_id() -> None:
    assert SyncOptions(source_name="web", agent_name="edge-1").inventory_id == "edge-1.web"
    with pytest.raises(BadRequest, match="invalid source name"):
        SyncOptions(source_name="Web_App", agent_name="a")
    # Too long together (a long host name, a child named after a long Application): cut,
    # with a hash of the whole, still a label value, unique and stable.
    long_id = SyncOptions(source_name="s" * 40, agent_name="a" * 40).inventory_id
    assert len(long_id) == 63
    assert long_id.startswith("a" * 40 + ".")
    assert long_id == SyncOptions(source_name="s" * 40, agent_name="a" * 40).inventory_id
    assert long_id != SyncOptions(source_name="s" * 41, agent_name="a" * 40).inventory_id
    assert long_id[-1].isalnum()
    assert SyncOptions(source_name="s", agent_name="a").namespace == "default"


def test_apply_modes() -> None:
    assert not SyncOptions(source_name="s", agent_name="a").server_side
    assert SyncOptions(source_name="s", agent_name="a", apply_mode="server-side").server_side
    with pytest.raises(BadRequest, match="invalid apply mode 'both'"):
        SyncOptions(source_name="s", agent_name="a", apply_mode="both")  # type: ignore[arg-type]


def test_ignore_pointers_must_be_pointers() -> None:
    with pytest.raises(BadRequest, match="must start with '/'"):
        IgnoreDifference(group="apps", kind="Deployment", json_pointers=("spec.replicas",))
    ig = IgnoreDifference(
        group="apps", kind="Deployment", json_pointers=("/spec/replicas",), namespace="prod"
    )
    assert ig.matches(group="apps", kind="Deployment", name="x", namespace="prod")
    assert not ig.matches(group="apps", kind="Deployment", name="x", namespace="dev")
    assert not ig.matches(group="", kind="Deployment", name="x", namespace="prod")


def test_results_fail_on_errors_failures_and_refusals() -> None:
    ref = ObjectRef(group="", kind="ConfigMap", name="c", namespace="n")
    ok = make_result(
        revision="r", objects=[ObjectResult(ref, Action.CREATED)], timings_ms={"git": 1.23456}
    )
    assert ok.status is SyncStatus.SUCCEEDED
    assert ok.counts["created"] == 1
    assert ok.changed
    assert dict(ok.timings_ms) == {"git": 1.235, "render": 0.0, "diff": 0.0, "apply": 0.0}
    refused = make_result(
        revision="r", objects=[ObjectResult(ref, Action.REFUSED, "conflict", "a.yaml", 3)]
    )
    assert refused.status is SyncStatus.FAILED
    assert refused.problems() == ["a.yaml:3: ConfigMap n/c refused: conflict"]
    assert make_result(revision="r", errors=["bad"]).status is SyncStatus.FAILED
    assert not make_result(revision="r").changed
