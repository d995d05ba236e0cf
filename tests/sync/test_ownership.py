"""Who may write an existing object: the source label and the adoption policies."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.sync.options import AdoptionPolicy
from gitkrm.sync.ownership import decide


def live(**labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": labels}}


MANAGED = {"app.kubernetes.io/managed-by": "gitkrm", "gitkrm.io/source": "mine"}


@pytest.mark.parametrize("policy", list(AdoptionPolicy))
def test_absent_and_own_objects_are_always_allowed(policy: AdoptionPolicy) -> None:
    assert decide(None, source="mine", policy=policy).allowed
    d = decide(live(**MANAGED), source="mine", policy=policy)
    assert d.allowed
    assert not d.adopt


@pytest.mark.parametrize("policy", list(AdoptionPolicy))
def test_another_sources_object_is_always_refused(policy: AdoptionPolicy) -> None:
    other = live(**{**MANAGED, "gitkrm.io/source": "theirs"})
    d = decide(other, source="mine", policy=policy)
    assert not d.allowed
    assert d.reason == 'conflict: owned by gitkrm source "theirs"'


@pytest.mark.parametrize(
    ("policy", "allowed"),
    [
        (AdoptionPolicy.NEVER, False),
        (AdoptionPolicy.IF_UNOWNED, True),
        (AdoptionPolicy.ALWAYS, True),
    ],
)
def test_unowned_object(policy: AdoptionPolicy, allowed: bool) -> None:
    d = decide(live(app="x"), source="mine", policy=policy)
    assert d.allowed is allowed
    assert d.adopt is allowed
    if not allowed:
        assert "no gitkrm source owns it" in d.reason
        assert "adoption policy never" in d.reason


@pytest.mark.parametrize(
    ("policy", "allowed"),
    [
        (AdoptionPolicy.NEVER, False),
        (AdoptionPolicy.IF_UNOWNED, False),
        (AdoptionPolicy.ALWAYS, True),
    ],
)
def test_object_of_another_tool(policy: AdoptionPolicy, allowed: bool) -> None:
    d = decide(live(**{"app.kubernetes.io/managed-by": "Helm"}), source="mine", policy=policy)
    assert d.allowed is allowed
    if not allowed:
        assert 'managed by "Helm"' in d.reason


@pytest.mark.parametrize("policy", list(AdoptionPolicy))
def test_a_manifests_managed_by_does_not_change_ownership(policy: AdoptionPolicy) -> None:
    helm = live(**{"app.kubernetes.io/managed-by": "Helm", "gitkrm.io/source": "mine"})
    d = decide(helm, source="mine", policy=policy)
    assert d.allowed
    assert not d.adopt


@pytest.mark.parametrize("policy", list(AdoptionPolicy))
def test_older_gitkrms_label_alone_is_owned_where_the_inventory_lists_it(
    policy: AdoptionPolicy,
) -> None:
    legacy = live(**{"app.kubernetes.io/managed-by": "gitkrm"})
    d = decide(legacy, source="mine", policy=policy, listed=True)
    assert (d.allowed, d.adopt) == (True, False)
    unlisted = decide(legacy, source="mine", policy=policy)
    assert unlisted.adopt or not unlisted.allowed  # not ours: adoption rules apply


@pytest.mark.parametrize("policy", list(AdoptionPolicy))
def test_a_stand_in_is_taken_over_by_any_source(policy: AdoptionPolicy) -> None:
    stand_in = live()
    stand_in["metadata"]["annotations"] = {"gitkrm.io/stand-in": "true"}
    d = decide(stand_in, source="mine", policy=policy)
    assert d.allowed
    assert d.adopt
    # once taken over, it is that source's like any other
    stand_in["metadata"]["labels"] = {"gitkrm.io/source": "theirs"}
    assert not decide(stand_in, source="mine", policy=policy).allowed
