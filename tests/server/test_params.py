"""cached_write_params: the same answers as write_params, errors never remembered."""

from __future__ import annotations

import pytest
from starlette.datastructures import QueryParams

from gitkrm.errors import Invalid
from gitkrm.krm import FieldValidation
from gitkrm.server.params import cached_write_params, write_params


@pytest.mark.parametrize(
    "query",
    [
        b"",
        b"fieldManager=gitkrm&fieldValidation=Strict",
        b"dryRun=All&fieldManager=a%20b&force=true",
        b"fieldManager=" + b"x" * 2000,  # too long to remember: parsed each time
    ],
)
def test_same_as_write_params(query: bytes) -> None:
    ua = "kubectl/v1.32.0 (linux/amd64)"
    try:
        want = write_params(
            QueryParams(query.decode("latin-1")), kind="PatchOptions", user_agent=ua
        )
    except Invalid:
        with pytest.raises(Invalid):
            cached_write_params(query, kind="PatchOptions", user_agent=ua)
        return
    for _ in range(2):
        assert cached_write_params(query, kind="PatchOptions", user_agent=ua) == want


def test_the_kind_and_user_agent_are_part_of_the_key() -> None:
    q = b"fieldValidation=Ignore"
    a = cached_write_params(q, kind="CreateOptions", user_agent="one/1")
    b = cached_write_params(q, kind="CreateOptions", user_agent="two/2")
    assert (a.manager, b.manager) == ("one", "two")
    assert a.field_validation is FieldValidation.IGNORE


def test_errors_are_raised_every_time() -> None:
    for _ in range(2):
        with pytest.raises(Invalid) as e:
            cached_write_params(b"dryRun=Some", kind="UpdateOptions", user_agent=None)
        assert "UpdateOptions" in str(e.value.to_status())
