"""Secret redaction: values and the last-applied annotation never shown, changes still visible."""

from __future__ import annotations

from typing import Any

from gitkrm.sync.redact import AFTER, BEFORE, MASK, redact, redact_pair

LA = "kubectl.kubernetes.io/last-applied-configuration"


def secret(data: dict[str, str], la: str | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": "s", "namespace": "n"}
    if la is not None:
        md["annotations"] = {LA: la, "other": "visible"}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": md, "data": data, "type": "Opaque"}


def test_redact_masks_values_and_last_applied() -> None:
    s = secret({"password": "aHVudGVyMg=="}, la='{"data":{"password":"aHVudGVyMg=="}}')
    s["stringData"] = {"token": "plain"}
    out = redact(s)
    assert out["data"] == {"password": MASK}
    assert out["stringData"] == {"token": MASK}
    assert out["metadata"]["annotations"] == {LA: MASK, "other": "visible"}
    assert s["data"]["password"] == "aHVudGVyMg=="  # the input is untouched
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}
    assert redact(cm) is cm


def test_redact_pair_shows_which_values_changed() -> None:
    before = secret({"same": "QQ==", "changed": "Qg==", "removed": "Qw=="}, la="old")
    after = secret({"same": "QQ==", "changed": "Qw==", "added": "RA=="}, la="new")
    b, a = redact_pair(before, after)
    assert b is not None
    assert a is not None
    assert b["data"] == {"same": MASK, "changed": BEFORE, "removed": MASK}
    assert a["data"] == {"same": MASK, "changed": AFTER, "added": MASK}
    assert b["metadata"]["annotations"][LA] == BEFORE
    assert a["metadata"]["annotations"][LA] == AFTER
    b2, a2 = redact_pair(before, before)
    assert b2 == a2
    assert b2 is not None
    assert b2["metadata"]["annotations"][LA] == MASK
    created_b, created_a = redact_pair(None, after)
    assert created_b is None
    assert created_a is not None
    assert set(created_a["data"].values()) == {MASK}
