"""A Secret's values never appear in admission errors (they reach logs, Git and status)."""

from __future__ import annotations

import pytest

from gitkrm.errors import Invalid
from gitkrm.schema import Registry


@pytest.mark.parametrize(
    "data",
    [
        {"apiKey": {"nested": "s3cr3t-nested"}},
        {"apiKey": ["s3cr3t-in-a-list"], "ok": "b2s="},
        {"apiKey": 12345678},
    ],
)
def test_invalid_secret_values_are_masked(data: dict[str, object]) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "d"},
        "data": data,
    }
    with pytest.raises(Invalid) as err:
        Registry.builtin().admit(secret)
    text = err.value.message + " ".join(c.message for c in err.value.causes)
    for secret_text in ("s3cr3t", "12345678", "b2s="):
        assert secret_text not in text
    assert "data.apiKey" in text
    assert '"[redacted]"' in text


def test_other_kinds_keep_their_values_in_errors() -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "d"},
        "data": {"k": {"nested": "visible"}},
    }
    with pytest.raises(Invalid, match="visible"):
        Registry.builtin().admit(cm)
