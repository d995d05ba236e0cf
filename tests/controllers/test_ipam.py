"""Addresses as numbers (`ipam.ip_value`): dotted IPv4 quads are read by hand, and the
result is what `ipaddress` says for every input, valid or not."""

from __future__ import annotations

import ipaddress

import pytest

from gitkrm.controllers.ipam import ip_pool, ip_text, ip_value


def reference(text: str) -> int | None:
    try:
        return int(ipaddress.ip_address(text))
    except ValueError:
        return None


@pytest.mark.parametrize(
    "text",
    [
        "10.244.0.1", "0.0.0.0", "255.255.255.255", "172.18.0.2",  # read by hand
        "01.2.3.4", "1.2.3.04", "256.1.1.1", "1.2.3.999", "1.2.3", "1.2.3.4.5", "1..2.3",
        "1.2.3.4 ", " 1.2.3.4", "+1.2.3.4", "1.2.3.-4", "\u0661.2.3.4", "a.b.c.d", "",
        "::1", "fd00::10", "1.2.3.4/32",
    ],
)  # fmt: skip
def test_ip_value_is_what_ipaddress_says(text: str) -> None:
    assert ip_value(text) == reference(text)


def test_ip_value_and_ip_text_round_trip_a_pool() -> None:
    pool = ip_pool("10.96.0.0/30", name="test")
    address = ip_text(pool.allocate())
    assert ip_value(address) == int(ipaddress.ip_address(address))
